package rolloutcontroller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/rollout/promotion"
	"github.com/convoy-gitops/convoy/sources"
)

// Publisher defaults.
const (
	// DefaultPublishInterval is the least time between two pushes of one record: every push
	// makes each downstream management cluster fetch, so a rollout's progress is coalesced;
	// within a poll interval of a minute it delays nothing a downstream sector waits for.
	DefaultPublishInterval = 10 * time.Second
	// DefaultPublishTimeout bounds one push.
	DefaultPublishTimeout = 30 * time.Second
	// maxPublishBackoff caps the wait after failed pushes of one record.
	maxPublishBackoff = 5 * time.Minute
)

// maxPending bounds the states of one record waiting for a push.
const maxPending = 2 * promotion.MaxCommits

// PublishRemotes gives the Publisher the remote of a GitSource with its credentials. The
// GitSource store is one.
type PublishRemotes interface {
	Remote(ctx context.Context, key sources.Key) (sources.Remote, error)
}

// Publisher publishes this management cluster's rollouts on the promotion refs of their
// package repositories, beside the rollout and never in its path: Report only records the
// state wanted, and one worker pushes the latest wanted state of each record, at most one push
// per record every Interval, each within Timeout, with a backoff after a failure. Every state
// reported is merged into the record in order, so that a withdrawal waiting for its push is
// never replaced by the next commit's progress. Before its first push a record is merged into
// what the remote holds (read from the remote itself), so that a restarted controller, or a
// store behind the remote, keeps the history it published. One HostedClusterPackage owns each
// record: another with the same key is refused.
type Publisher struct {
	// Identity names the publisher; a zero Identity publishes nothing.
	Identity Identity
	// Remotes finds the remotes and the records; required.
	Remotes PublishRemotes
	// Interval: see DefaultPublishInterval. Timeout: see DefaultPublishTimeout.
	Interval, Timeout time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Recorder, when set, announces on the owning HostedClusterPackage that its record could
	// not be pushed (at the first failure in a row) and that it is pushed again.
	Recorder events.EventRecorder

	mu      sync.Mutex
	entries map[string]*publication
	lastID  uint64
	wake    chan struct{}
}

// publication is the wanted and the published state of one record, by ref.
type publication struct {
	source sources.Key
	key    string
	// owner is the HostedClusterPackage that publishes it; ownerUID its UID, for the events.
	owner    string
	ownerUID types.UID
	// id tells this publication from a later one of the same ref (after Forget), whose state
	// the outcome of a push of this one must not touch.
	id uint64
	// pending are the states reported since the last push, oldest first; firstSeq numbers
	// pending[0], and each state after it the next number, so that a push removes exactly the
	// states it carried, however many Report dropped from the front meanwhile.
	pending  []promotion.CommitRecord
	firstSeq uint64
	// pushed is the record last pushed; nil until the first push.
	pushed *promotion.Record
	dirty  bool
	// failures counts the failed pushes in a row; next is when the next push may go.
	failures int
	next     time.Time
}

// Report asks for c to be published in the record of key, on the repository of source, for
// the HostedClusterPackage owner. It never waits. The caller has found owner to be the key's
// owner (promotionKeyOwner, from the objects); a record another HostedClusterPackage held in
// this process passes to owner, its unpushed states dropped, as when the source changes.
func (p *Publisher) Report(ownerObj *convoyv1alpha1.HostedClusterPackage, source sources.Key, key string, c promotion.CommitRecord) {
	if p == nil || p.Identity == (Identity{}) {
		return
	}
	owner := ownerObj.Name
	ref := sources.PromotionRef(p.Identity.Sector, p.Identity.ManagementCluster, key)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	e := p.entries[ref]
	if e == nil {
		p.lastID++
		e = &publication{id: p.lastID, source: source, key: key, owner: owner}
		p.entries[ref] = e
	}
	e.ownerUID = ownerObj.UID
	if e.owner != owner || e.source != source {
		e.owner = owner
		e.firstSeq += uint64(len(e.pending))
		e.source, e.pushed, e.pending = source, nil, nil
	}
	last := e.pushed
	if n := len(e.pending); n > 0 {
		merged := promotion.Record{Commits: []promotion.CommitRecord{e.pending[n-1]}}
		last = &merged
	}
	if last != nil && samePublished(*last, c) {
		return
	}
	e.pending = append(e.pending, c)
	if drop := len(e.pending) - maxPending; drop > 0 {
		e.pending, e.firstSeq = e.pending[drop:], e.firstSeq+uint64(drop)
	}
	e.dirty = true
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Forget drops the record of the HostedClusterPackage owner (deleted), so that its key is free.
func (p *Publisher) Forget(owner string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for ref, e := range p.entries {
		if e.owner == owner {
			delete(p.entries, ref)
		}
	}
}

// samePublished reports whether r already says c, apart from the times Merge keeps.
func samePublished(r promotion.Record, c promotion.CommitRecord) bool {
	old, ok := r.Find(c.Commit)
	if !ok || len(r.Commits) == 0 || r.Commits[0].Commit != c.Commit {
		return false
	}
	old.StartedAt, old.Since, c.StartedAt, c.Since = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return reflect.DeepEqual(old, c)
}

// NeedLeaderElection makes the Publisher run on the leader only: one writer per record.
func (p *Publisher) NeedLeaderElection() bool { return true }

// Start runs the worker until ctx ends.
func (p *Publisher) Start(ctx context.Context) error {
	p.mu.Lock()
	p.init()
	p.mu.Unlock()
	for {
		ref, e, wait := p.due()
		if ref != "" {
			p.push(ctx, ref, e)
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-p.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// due returns a record due for a push, or how long until the next one is.
func (p *Publisher) due() (string, publication, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now, wait := p.now(), time.Hour
	for ref, e := range p.entries {
		if !e.dirty {
			continue
		}
		if !now.Before(e.next) {
			e.dirty = false
			out := *e
			out.pending = append([]promotion.CommitRecord(nil), e.pending...)
			return ref, out, 0
		}
		wait = min(wait, e.next.Sub(now))
	}
	return "", publication{}, wait
}

// push merges the wanted state into the record and pushes it.
func (p *Publisher) push(ctx context.Context, ref string, e publication) {
	rec, err := p.send(ctx, ref, e)
	p.settle(ctx, ref, e, rec, err)
}

// settle records the outcome of the push of e (a snapshot of the entry of ref): on success the
// states it carried leave the pending ones; on failure the entry is due again after a backoff.
func (p *Publisher) settle(ctx context.Context, ref string, e publication, rec promotion.Record, err error) {
	log := ctrl.LoggerFrom(ctx).WithValues("ref", ref, "source", e.source.String())
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.entries[ref]
	if cur == nil || cur.id != e.id {
		return
	}
	if err != nil {
		promotionPushes.WithLabelValues("failure").Inc()
		cur.failures++
		cur.dirty = true
		if cur.failures == 1 {
			p.event(cur, corev1.EventTypeWarning, PromotionNotPublishedReason, "Could not push %s: %s", ref, rollout.BoundSample(err.Error()))
		}
		cur.next = p.now().Add(min(maxPublishBackoff, p.interval()<<min(cur.failures, 10)))
		log.Error(err, "Publishing the promotion record failed", "failures", cur.failures)
		return
	}
	promotionPushes.WithLabelValues("success").Inc()
	if cur.failures > 0 {
		p.event(cur, corev1.EventTypeNormal, PromotionPublishedReason, "Pushed %s again after %d failures", ref, cur.failures)
	}
	cur.failures, cur.pushed, cur.next = 0, &rec, p.now().Add(p.interval())
	if carried := e.firstSeq + uint64(len(e.pending)); carried > cur.firstSeq { // those reported since are pushed next
		drop := min(carried-cur.firstSeq, uint64(len(cur.pending)))
		cur.pending, cur.firstSeq = cur.pending[drop:], cur.firstSeq+drop
	}
	log.V(1).Info("Published the promotion record", "commits", len(rec.Commits))
}

// send builds the record (merging into the one published before) and pushes it.
func (p *Publisher) send(ctx context.Context, ref string, e publication) (promotion.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout())
	defer cancel()
	remote, err := p.Remotes.Remote(ctx, e.source)
	if err != nil {
		return promotion.Record{}, err
	}
	rec, err := p.base(ctx, remote, ref, e)
	if err != nil {
		return promotion.Record{}, err
	}
	for _, c := range e.pending {
		rec = rec.Merge(c)
	}
	data, err := rec.Encode()
	if err != nil {
		return promotion.Record{}, err
	}
	return rec, sources.PushPromotionRecord(ctx, remote, ref, data, p.now())
}

// base returns the record to merge into: the one last pushed, else the one the remote holds,
// else an empty one. A record there that does not decode is replaced, not kept: it is this
// publisher's own ref.
func (p *Publisher) base(ctx context.Context, remote sources.Remote, ref string, e publication) (promotion.Record, error) {
	if e.pushed != nil {
		return *e.pushed, nil
	}
	empty := promotion.Record{ManagementCluster: p.Identity.ManagementCluster, Sector: p.Identity.Sector, Key: e.key}
	data, ok, err := sources.FetchPromotionRecord(ctx, remote, ref, promotion.MaxRecordBytes)
	if err != nil {
		return promotion.Record{}, fmt.Errorf("reading the published record: %w", err)
	}
	if !ok {
		return empty, nil
	}
	rec, err := promotion.DecodeRecord(data)
	if err != nil || rec.ManagementCluster != empty.ManagementCluster || rec.Sector != empty.Sector || rec.Key != e.key {
		return empty, nil
	}
	return rec, nil
}

// event announces on the publication's owner, when the Publisher has a Recorder.
func (p *Publisher) event(e *publication, eventType, reason, format string, args ...any) {
	if p.Recorder == nil {
		return
	}
	owner := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: e.owner, UID: e.ownerUID}}
	owner.SetGroupVersionKind(convoyv1alpha1.GroupVersion.WithKind("HostedClusterPackage"))
	p.Recorder.Eventf(owner, nil, eventType, reason, eventAction, format, args...)
}

func (p *Publisher) init() {
	if p.entries == nil {
		p.entries = map[string]*publication{}
		p.wake = make(chan struct{}, 1)
	}
}

func (p *Publisher) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Publisher) interval() time.Duration {
	return orDefaultDuration(p.Interval, DefaultPublishInterval)
}
func (p *Publisher) timeout() time.Duration {
	return orDefaultDuration(p.Timeout, DefaultPublishTimeout)
}

// orDefaultDuration returns d, or def when d is not positive.
func orDefaultDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// publishPromotion hands the pass's outcome on the update revision's commit to the Publisher,
// under spec.promotion.publish (commitRecord says which).
func (r *HostedClusterPackageReconciler) publishPromotion(_ context.Context, s *scope, err error) {
	if r.Publisher == nil || !publishes(s) || s.keyOwner != "" {
		return
	}
	key, keyErr := templateSource(s.obj)
	if keyErr != nil {
		return
	}
	r.Publisher.Report(s.obj, key, promotionKey(s.obj), commitRecord(s, err, r.now()))
}

// publishes reports whether the pass publishes its progress for the sectors after it: under
// spec.promotion.publish, once the update revision has a commit.
func publishes(s *scope) bool {
	spec := s.obj.Spec.Promotion
	return spec != nil && spec.Publish && s.plan != nil && s.update.Commit != ""
}

// commitRecord is what the pass did with the update revision's commit: Rejected when the
// revision is rejected, Failed when failures stop its rollout, Completed once every partition
// is done (after its last soak and checks), else Progressing with the partitions and clusters
// done. Both buses publish it: the promotion refs and the commit status.
func commitRecord(s *scope, err error, now time.Time) promotion.CommitRecord {
	c := promotion.CommitRecord{Commit: s.update.Commit, State: promotion.Progressing, StartedAt: now, Since: now,
		Partitions: len(s.plan.Partitions), Clusters: int(s.plan.Counts.Total), ClustersDone: int(s.plan.Counts.Progressed)}
	for _, part := range s.plan.Partitions {
		if part.State == convoyv1alpha1.PartitionDone {
			c.PartitionsDone++
		}
	}
	var stalled *pass.Stalling
	switch {
	case s.plan.Reject || s.update.Rejected:
		c.State = promotion.Rejected
	case errors.As(err, &stalled) && len(s.plan.Failed) > 0 && failuresStop(s.obj, s.plan):
		c.State = promotion.Failed
	case s.plan.Completed:
		c.State = promotion.Completed
	}
	return c
}

// Reasons of the Publisher's events.
const (
	// PromotionConflictReason: the HostedClusterPackage's promotion key is another's.
	PromotionConflictReason = "PromotionKeyConflict"
	// PromotionNotPublishedReason: the first of a run of failed pushes of its record; the
	// downstream sectors wait on it until a push succeeds.
	PromotionNotPublishedReason = "PromotionNotPublished"
	// PromotionPublishedReason: a push succeeded after failures.
	PromotionPublishedReason = "PromotionPublished"
)
