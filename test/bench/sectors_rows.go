package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/convoy-gitops/convoy/rollout/promotion"
)

// sectorsWebhookBound is the target of the time to the first pin with a webhook.
const sectorsWebhookBound = 2 * time.Second

// promote commits the next revision, asks the canary to poll, and follows the commit down the
// chain: for each downstream sector, when the upstream's completion was on the bus and its
// soak over (ready), and when the first of its Packages pinned the commit. With webhook, a poll
// of the downstream GitSource is requested the moment the upstream's record lands, as the
// forge's push webhook would; without, the downstream polls every sectorsPoll. It also counts
// each sector's writes on Packages over the whole promotion, per Package.
func (s *sectorsRun) promote(ctx context.Context, webhook bool) error {
	mode := map[bool]string{false: "polling every " + sectorsPoll.String(), true: "a poll requested by webhook"}[webhook]
	before := make([]snapshot, len(s.envs))
	for i, e := range s.envs {
		var err error
		if before[i], err = e.begin(ctx); err != nil {
			return err
		}
	}
	commit, err := s.bus().commitNext()
	if err != nil {
		return err
	}
	logf(s.cfg, "sectors (%s): promoting %.12s", mode, commit)
	if err := s.bus().requestPoll(ctx); err != nil {
		return err
	}
	for i := 1; i < len(s.envs); i++ {
		if err := s.measureHop(ctx, i, commit, mode, webhook); err != nil {
			return err
		}
	}
	return s.addWriteRows(ctx, before, commit, mode)
}

// measureHop measures the hop from sector i-1 to sector i.
func (s *sectorsRun) measureHop(ctx context.Context, i int, commit, mode string, webhook bool) error {
	var trigger *env
	if webhook {
		trigger = s.envs[i]
	}
	ready, err := s.awaitReady(ctx, sectorNames[i-1], commit, trigger)
	if err != nil {
		return err
	}
	pinned, err := s.envs[i].awaitPin(ctx, commit, rolloutTimeout)
	if err != nil {
		return fmt.Errorf("sector %s: %w", sectorNames[i], err)
	}
	bound := map[bool]time.Duration{false: sectorsPoll, true: sectorsWebhookBound}[webhook]
	took := pinned.Sub(ready)
	s.res.add(Row{Scenario: fmt.Sprintf("sectors N=%d %s → %s, %s", s.n, sectorNames[i-1], sectorNames[i], mode),
		Metric: "from upstream completion + soak to the first pin", Value: took.Seconds(), Unit: "s",
		Target: "≤ " + bound.String(), Met: ptr(took <= bound),
		Note: fmt.Sprintf("soak %s; the record is pushed at most every %s", sectorsSoak, sectorsPublish)})
	return nil
}

// awaitReady waits until the upstream sector's record says it completed commit, and returns
// when the downstream may take it: the record's arrival on the bus, or the end of the soak if
// later. On arrival it requests a poll of trigger, when set.
func (s *sectorsRun) awaitReady(ctx context.Context, upstream, commit string, trigger *env) (time.Time, error) {
	deadline := time.Now().Add(rolloutTimeout)
	for time.Now().Before(deadline) {
		rec, ok, err := s.readRecord(ctx, upstream)
		if err != nil {
			return time.Time{}, err
		}
		if c, found := rec.Find(commit); ok && found && c.State == promotion.Completed {
			landed := time.Now()
			if trigger != nil {
				if err := trigger.requestPoll(ctx); err != nil {
					return time.Time{}, err
				}
			}
			return later(landed, c.Since.Add(sectorsSoak)), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return time.Time{}, fmt.Errorf("sector %s has not published commit %.12s completed after %s", upstream, commit, rolloutTimeout)
}

// awaitPin returns when a Package of the env first pinned commit.
func (e *env) awaitPin(ctx context.Context, commit string, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for !e.watch.any(specAt(commit)) {
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("no Package pinned %.12s after %s", commit, timeout)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return time.Now(), nil
}

// addWriteRows waits until every sector runs commit, then adds each sector's writes on Packages
// per Package over the promotion; the downstream sectors' against the canary's, which has no
// upstream: the bus must add none.
func (s *sectorsRun) addWriteRows(ctx context.Context, before []snapshot, commit, mode string) error {
	perPackage := make([]float64, len(s.envs))
	for i, e := range s.envs {
		if err := e.waitSpec(ctx, commit, rolloutTimeout); err != nil {
			return fmt.Errorf("sector %s: %w", sectorNames[i], err)
		}
		if err := e.waitRolloutsCompleted(ctx, hcpName); err != nil {
			return err
		}
		after, err := e.take(ctx)
		if err != nil {
			return err
		}
		w := since(before[i], after)
		perPackage[i] = packageWrites(w.requests) / float64(s.n)
		row := Row{Scenario: fmt.Sprintf("sectors N=%d %s, %s", s.n, sectorNames[i], mode),
			Metric: "writes on Packages per Package", Value: perPackage[i], Unit: "requests", Note: w.requests.String()}
		if i > 0 {
			row.Baseline, row.BaselineName = ptr(perPackage[0]), "canary (no upstream)"
			row.Target, row.Met = "≤ 1.0×", ptr(perPackage[i] <= perPackage[0])
		}
		s.res.add(row)
	}
	return nil
}

// packageWrites counts the writes on Packages and their status.
func packageWrites(r Requests) float64 {
	var n float64
	for k, v := range r {
		verb, rest, _ := strings.Cut(k, "/")
		if writeVerbs[verb] && (rest == "packages" || strings.HasPrefix(rest, "packages/")) {
			n += v
		}
	}
	return n
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
