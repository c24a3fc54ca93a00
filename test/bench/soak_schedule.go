package bench

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// The schedule's one-off faults, at these fractions of the run: the leader kill comes before
// the last half, over which the slopes are measured, so that they measure one process.
const (
	// soakBrokenAt is a broken commit every run makes, however short: its stall is judged.
	soakBrokenAt     = 0.05
	soakLeaderKillAt = 0.2
	soakGitOutageAt  = 0.3
	soakForcePushAt  = 0.55
	// soakQuiesceAt ends the random events: what is pending finishes, the fleet settles.
	soakQuiesceAt = 0.7
)

// soakEvent is one kind of random event, with its weight in the draw.
type soakEvent struct {
	name   string
	weight int
	do     func(context.Context, *soakRun) (string, error)
}

// soakEvents are the random events of the schedule.
var soakEvents = []soakEvent{
	{"commit", 6, commitGood},
	{"commit-broken", 1, commitBroken},
	{"template-edit", 2, editTemplate},
	{"cluster-created", 1, createCluster},
	{"cluster-deleted", 1, deleteCluster},
	{"cluster-relabelled", 1, relabelCluster},
	{"cluster-unavailable", 1, makeUnavailable},
	{"pause", 1, pauseAddon},
}

// soakPlanned is a random event of the schedule, drawn up front from the seed: how long after
// the previous event it comes, and the source of its own random choices (which add-on, which
// greeting). A replay of a seed draws the same events in the same order with the same
// choices, whatever the leader kill and the Git outage lasted; the gap runs from when the
// previous event ran, so that a one-off that took long is not followed by a burst.
type soakPlanned struct {
	gap     time.Duration
	ev      soakEvent
	choices *rand.Rand
}

// run drives the schedule until cfg.Duration is over, sampling all along: the random events
// drawn up front, one a gap after the other, until soakQuiesceAt, with the one-off events at
// their times; then the pending actions and the wait for the fleet to settle.
func (s *soakRun) run(ctx context.Context) error {
	oneOff := rand.New(rand.NewPCG(s.rng.Uint64(), s.rng.Uint64()))
	planned := s.drawSchedule()
	s.start = time.Now()
	next := s.start.Add(planned[0].gap)
	sampling := s.startSampling(ctx)
	defer sampling()
	at := func(f float64) time.Time { return s.start.Add(time.Duration(f * float64(s.cfg.Duration))) }
	broken := func(ctx context.Context) error {
		s.choices = oneOff
		note, err := commitBroken(ctx, s)
		s.logf("soak: %s", note)
		return err
	}
	oneOffs := []soakAction{{at(soakBrokenAt), "commit-broken", broken}, {at(soakLeaderKillAt), "leader-killed", s.killLeader},
		{at(soakGitOutageAt), "git-outage", s.gitOutage}, {at(soakForcePushAt), "force-push", s.forcePush}}
	for time.Now().Before(at(soakQuiesceAt)) {
		if err := s.runDue(ctx, &oneOffs); err != nil {
			return err
		}
		if err := s.runDue(ctx, &s.pending); err != nil {
			return err
		}
		if len(planned) > 0 && time.Now().After(next) {
			if err := s.runPlanned(ctx, planned[0]); err != nil {
				return err
			}
			planned = planned[1:]
			if len(planned) > 0 {
				next = time.Now().Add(planned[0].gap)
			}
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
	return s.quiesce(ctx, at(1))
}

// drawSchedule draws the random events from the seed: the gaps between them uniform between
// half and one and a half times EventEvery, each event by weight, as many as fit before
// soakQuiesceAt if no event took any time (the run stops at soakQuiesceAt, whatever is left).
func (s *soakRun) drawSchedule() []soakPlanned {
	total := 0
	for _, ev := range soakEvents {
		total += ev.weight
	}
	end := time.Duration(soakQuiesceAt * float64(s.cfg.Duration))
	var out []soakPlanned
	for at := time.Duration(0); at < end; {
		gap := s.nextGap()
		at += gap
		n := s.rng.IntN(total)
		for _, ev := range soakEvents {
			if n -= ev.weight; n < 0 {
				out = append(out, soakPlanned{gap: gap, ev: ev, choices: rand.New(rand.NewPCG(s.rng.Uint64(), s.rng.Uint64()))})
				break
			}
		}
	}
	return out
}

// nextGap draws the time to the next event: uniform between half and one and a half times
// EventEvery.
func (s *soakRun) nextGap() time.Duration {
	return s.cfg.EventEvery/2 + time.Duration(s.rng.Int64N(int64(s.cfg.EventEvery)))
}

// runPlanned runs a planned event with its own random choices.
func (s *soakRun) runPlanned(ctx context.Context, p soakPlanned) error {
	s.choices = p.choices
	note, err := p.ev.do(ctx, s)
	s.record(p.ev.name, note)
	if err != nil {
		return fmt.Errorf("soak: %s: %w", p.ev.name, err)
	}
	return nil
}

// runDue runs and removes the actions of list that are due.
func (s *soakRun) runDue(ctx context.Context, list *[]soakAction) error {
	for _, a := range slices.Clone(*list) {
		if time.Now().Before(a.due) {
			continue
		}
		*list = slices.DeleteFunc(*list, func(b soakAction) bool { return b.name == a.name && b.due.Equal(a.due) })
		s.record(a.name, "")
		if err := a.do(ctx); err != nil {
			return fmt.Errorf("soak: %s: %w", a.name, err)
		}
	}
	return nil
}

// later schedules an action after d.
func (s *soakRun) later(d time.Duration, name string, do func(context.Context) error) {
	s.pending = append(s.pending, soakAction{due: time.Now().Add(d), name: name, do: do})
}

// record notes an event in the results.
func (s *soakRun) record(name, note string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res.Events = append(s.res.Events, SoakEvent{At: time.Since(s.start).Seconds(), Name: name, Note: note})
	s.logf("soak: %s %s", name, note)
}

// quiesce runs every pending action now, then waits until the fleet settled at the goal of
// every add-on, and samples on until end.
func (s *soakRun) quiesce(ctx context.Context, end time.Time) error {
	for len(s.pending) > 0 {
		for i := range s.pending {
			s.pending[i].due = time.Time{}
		}
		if err := s.runDue(ctx, &s.pending); err != nil {
			return err
		}
	}
	s.record("quiesce", "no more events; waiting for every add-on to settle")
	if err := s.waitSettled(ctx, max(time.Until(end), 5*time.Minute)); err != nil {
		return err
	}
	s.record("settled", "")
	return sleepCtx(ctx, time.Until(end))
}

// pick returns a random add-on of those that satisfy ok, or nil.
func (s *soakRun) pick(ok func(*soakAddon) bool) *soakAddon {
	var out []*soakAddon
	for _, a := range s.addons {
		if ok(a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out[s.choices.IntN(len(out))]
}

// commitGood commits the next good revision of a random add-on that is not broken.
func commitGood(ctx context.Context, s *soakRun) (string, error) {
	a := s.pick(func(a *soakAddon) bool { return !a.broken })
	if a == nil {
		return "every add-on is broken", nil
	}
	a.rev++
	return fmt.Sprintf("%s revision %d", a.name(), a.rev), s.commit(ctx, fmt.Sprintf("%s: revision %d", a.name(), a.rev), a)
}

// commitBroken commits a broken revision of a random add-on that can break and is not
// broken, and its fix after BrokenFor; the fix first judges that the broken revision stalled.
func commitBroken(ctx context.Context, s *soakRun) (string, error) {
	a := s.pick(func(a *soakAddon) bool { return a.canBreak() && !a.broken })
	if a == nil {
		return "no add-on to break", nil
	}
	a.rev++
	a.broken = true
	total := s.totalAtBreak(a)
	if err := s.commit(ctx, fmt.Sprintf("%s: revision %d, broken", a.name(), a.rev), a); err != nil {
		return "", err
	}
	broken := s.head
	s.later(s.cfg.BrokenFor, "fix-"+a.name(), func(ctx context.Context) error { return s.fix(ctx, a, broken, total) })
	return fmt.Sprintf("%s revision %d (broken, %.8s)", a.name(), a.rev, broken), nil
}

// fix judges that the broken commit of a stalled, then commits a's next, good, revision;
// totalAtBreak is the judged fleet's size when it broke.
func (s *soakRun) fix(ctx context.Context, a *soakAddon, broken string, totalAtBreak int) error {
	s.judgeStall(a, broken, totalAtBreak)
	if !a.broken {
		return nil // a force-push dropped the broken revision already
	}
	a.rev++
	a.broken = false
	return s.commit(ctx, fmt.Sprintf("%s: revision %d, the fix", a.name(), a.rev), a)
}

// editTemplate changes the config of the templates add-on's HostedClusterPackage.
func editTemplate(ctx context.Context, s *soakRun) (string, error) {
	hcp := &convoyv1alpha1.HostedClusterPackage{}
	if err := s.e.admin.Get(ctx, client.ObjectKey{Name: "soak-" + soakTemplates}, hcp); err != nil {
		return "", err
	}
	greeting := fmt.Sprintf("hello-%d", s.choices.IntN(1000))
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"config":{"greeting":%q}}}}}`, greeting)
	return "greeting " + greeting, s.e.admin.Patch(ctx, hcp, client.RawPatch("application/merge-patch+json", []byte(patch)))
}

// pauseAddon pauses a random add-on's HostedClusterPackage and unpauses it a minute later.
func pauseAddon(ctx context.Context, s *soakRun) (string, error) {
	a := s.addons[s.choices.IntN(len(s.addons))]
	set := func(ctx context.Context, paused bool) error {
		hcp := &convoyv1alpha1.HostedClusterPackage{}
		hcp.Name = a.name()
		patch := fmt.Sprintf(`{"spec":{"paused":%t}}`, paused)
		return s.e.admin.Patch(ctx, hcp, client.RawPatch("application/merge-patch+json", []byte(patch)))
	}
	if err := set(ctx, true); err != nil {
		return "", err
	}
	s.later(min(time.Minute, s.cfg.BrokenFor), "unpause-"+a.name(), func(ctx context.Context) error { return set(ctx, false) })
	return a.name(), nil
}

// killLeader replaces the controller by two replicas with leader election, the standby with
// a store of its own, and SIGKILLs the leader; the standby stays the controller of the run.
func (s *soakRun) killLeader(ctx context.Context) error {
	e := s.e
	if err := e.ctrl.Stop(); err != nil {
		return err
	}
	leader, err := e.startReplica(ctx, e.dir)
	if err != nil {
		return err
	}
	s.setController(leader)
	if err := waitLeader(ctx, leader, time.Minute); err != nil {
		return err
	}
	standbyDir := filepath.Join(e.dir, "standby")
	if err := os.MkdirAll(standbyDir, 0o750); err != nil {
		return err
	}
	standby, err := e.startReplica(ctx, standbyDir)
	if err != nil {
		return err
	}
	s.setStore(filepath.Join(standbyDir, "sources"))
	if err := leader.Kill(); err != nil {
		return err
	}
	s.setController(standby)
	return waitLeader(ctx, standby, leaseDuration+retryPeriod+takeoverSlack)
}

// setController makes c the controller of the run, which the samples measure.
func (s *soakRun) setController(c *Controller) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.e.ctrl = c
}

// controller returns the controller of the run.
func (s *soakRun) controller() *Controller {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.e.ctrl
}

// gitOutage stalls the Git server for GitDownFor, asking for a poll meanwhile and after.
func (s *soakRun) gitOutage(ctx context.Context) error {
	s.e.git.SetStalled(true)
	err := s.e.requestPoll(ctx)
	if err == nil {
		err = sleepCtx(ctx, s.cfg.GitDownFor)
	}
	s.e.git.SetStalled(false)
	if err != nil {
		return err
	}
	return s.e.requestPoll(ctx)
}

// forcePush resets the branch to the head before the last commit, dropping it: the add-ons go
// back to what that commit holds.
func (s *soakRun) forcePush(ctx context.Context) error {
	s.mu.Lock()
	back := s.previousHead
	revs := maps.Clone(s.contents[back])
	s.mu.Unlock()
	if back == "" {
		return nil
	}
	if err := s.e.repo.ResetBranch("main", back); err != nil {
		return err
	}
	for _, a := range s.addons {
		a.rev, a.broken = revs[a.name()].Rev, revs[a.name()].Broken
	}
	s.setHead(back)
	for _, a := range s.addons {
		if a.broken {
			total := s.totalAtBreak(a)
			s.later(s.cfg.BrokenFor, "fix-"+a.name(), func(ctx context.Context) error { return s.fix(ctx, a, back, total) })
		}
	}
	return s.e.requestPoll(ctx)
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
