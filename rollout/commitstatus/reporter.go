package commitstatus

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/internal/dialpolicy"
)

// Defaults of the Reporter.
const (
	// DefaultInterval is the least time between two requests to the forges.
	DefaultInterval = 200 * time.Millisecond
	// DefaultTimeout bounds one request.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxBackoff bounds the wait before a failed send is tried again.
	DefaultMaxBackoff = 30 * time.Second
	// DefaultMaxContexts bounds the contexts the Reporter holds.
	DefaultMaxContexts = 10000
	// firstBackoff is the wait after a first failed send.
	firstBackoff = time.Second
)

// Event reasons on the HostedClusterPackage.
const (
	// ReportedReason: a state reached the forge.
	ReportedReason = "CommitStatusReported"
	// FailedReason: a send failed; it is retried.
	FailedReason = "CommitStatusFailed"
)

// Reporter sends the latest wanted state of each status context to its forge, beside the
// rollout: Report never waits, Start runs the worker.
type Reporter struct {
	// Secrets reads the token Secrets; use a reader that does not cache Secrets.
	Secrets client.Reader
	// Recorder emits events on the HostedClusterPackages; nil emits none.
	Recorder events.EventRecorder
	// HTTP sends the requests; default a client with Timeout. Its redirects are never
	// followed, whatever its CheckRedirect: a redirect is a failed send.
	HTTP *http.Client
	// AllowInsecureHTTP allows http:// API URLs, which carry the token in clear
	// (--commit-status-allow-insecure-http).
	AllowInsecureHTTP bool
	// Network says which addresses API URLs may be reached at: no link-local or metadata
	// address unless allowed (--allow-link-local-addresses). A literal address is judged
	// whatever HTTP is; a resolved one by the transport built when HTTP is nil.
	Network dialpolicy.Policy
	// Dial connects to an address Network checked, when HTTP is nil; default a net.Dialer
	// with a 3 s timeout. The tests set one that fails them if it is called.
	Dial dialpolicy.DialFunc
	// Interval, Timeout, MaxBackoff, MaxContexts: see the defaults.
	Interval    time.Duration
	Timeout     time.Duration
	MaxBackoff  time.Duration
	MaxContexts int
	// ReadTTL is how long Read serves a commit's statuses again; default DefaultReadTTL.
	ReadTTL time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time

	reads readCache

	mu      sync.Mutex
	entries map[contextKey]*entry
	// hosts holds the backoff of each API host that did not answer; lastHost is the host sent
	// to last, for the round robin.
	hosts    map[string]*hostState
	lastHost string
	wake     chan struct{}
	once     sync.Once
}

// hostState is the backoff of an API host whose last request got no answer.
type hostState struct {
	failures int
	next     time.Time
}

// contextKey names the one status context of a HostedClusterPackage: when its GitSource points
// elsewhere, the entry is replaced, so changing apiURL or repository never adds entries. A
// commit the package left before its rollout ended keeps an entry of its own (commit set)
// until its last state reached the forge.
type contextKey struct {
	namespace, name string
	commit          string
}

// keyOf returns the key of the HostedClusterPackage regarding, else of the context's name.
func keyOf(regarding runtime.Object, st Status) contextKey {
	if obj, ok := regarding.(client.Object); ok && obj != nil {
		return contextKey{namespace: obj.GetNamespace(), name: obj.GetName()}
	}
	return contextKey{name: st.name()}
}

// entry is what the Reporter knows of one context.
type entry struct {
	want Status
	// regarding is the object events go to.
	regarding runtime.Object
	// sent is the last state that reached the forge; failed, the last that did not.
	sent, failed *Status
	// invalid: the last send was refused as a configuration error (retried slowly).
	invalid  bool
	attempts int
	next     time.Time
	since    time.Time
	// holdUntil is the end of the forge's Retry-After (or rate-limit reset) of the last send:
	// nothing, not even a changed Secret, sends before it.
	holdUntil time.Time
}

// Report asks that st be shown on its commit, for the object regarding (the
// HostedClusterPackage, for events). It returns at once; an unchanged state is a no-op.
func (r *Reporter) Report(regarding runtime.Object, st Status) {
	r.init()
	key := keyOf(regarding, st)
	r.mu.Lock()
	e, ok := r.entries[key]
	if ok && e.want.Commit != st.Commit {
		r.settleLocked(key, e, st.Commit)
	}
	// Back at a commit it had left: the live entry speaks for it again.
	delete(r.entries, key.leftAt(st.Commit))
	switch {
	case ok && e.want == st:
		r.mu.Unlock()
		return
	case !ok && len(r.entries) >= r.maxContexts():
		r.mu.Unlock()
		updates.WithLabelValues(st.Target.Provider, OutcomeDropped).Inc()
		return
	case !ok, e.want.Target != st.Target:
		// A new context, or its GitSource now points elsewhere (or at another Secret):
		// start afresh, due at once.
		e = &entry{}
		r.entries[key] = e
	}
	e.want, e.regarding, e.since = st, regarding, r.now()
	r.mu.Unlock()
	r.poke()
}

// leftAt is the key of the entry of commit, a commit the package left.
func (k contextKey) leftAt(commit string) contextKey {
	return contextKey{namespace: k.namespace, name: k.name, commit: commit}
}

// settleLocked gives the commit the live entry e leaves (for next) a last state of its own:
// its final state, if it had one that did not reach the forge yet, else "superseded by
// next", so that the commit does not keep "pending" forever. The entry is sent like the
// others, rate-limited and coalesced, and removed once sent. Callers hold r.mu.
func (r *Reporter) settleLocked(key contextKey, e *entry, next string) {
	last := e.want
	switch {
	case !last.final():
		last = last.supersededBy(next)
	case e.sent != nil && *e.sent == last:
		return
	}
	left := key.leftAt(last.Commit)
	if old, ok := r.entries[left]; ok && old.want == last {
		return
	} else if !ok && len(r.entries) >= r.maxContexts() {
		updates.WithLabelValues(last.Target.Provider, OutcomeDropped).Inc()
		return
	}
	r.entries[left] = &entry{want: last, regarding: e.regarding, since: r.now()}
}

// RetrySecret makes the failed states whose token is in secret due at once: the Secret
// changed, so a refused token need not wait for the slow retry (MaxBackoff). A forge's
// Retry-After still holds: a Secret that changes often must not make the Reporter ignore it.
func (r *Reporter) RetrySecret(secret types.NamespacedName) {
	r.init()
	r.mu.Lock()
	woken, now := false, r.now()
	for _, e := range r.entries {
		if e.failed != nil && e.pending() && e.want.Target.Secret == secret && !now.Before(e.holdUntil) {
			e.next, woken = time.Time{}, true
		}
	}
	r.mu.Unlock()
	if woken {
		r.poke()
	}
}

// poke wakes the worker, if it sleeps.
func (r *Reporter) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Forget drops the contexts of the HostedClusterPackage name (it was deleted).
func (r *Reporter) Forget(name string) {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.entries {
		if k.name == name {
			delete(r.entries, k)
		}
	}
}

// NeedLeaderElection makes the worker run on the leader only, where the rollout runs.
func (r *Reporter) NeedLeaderElection() bool { return true }

// Start runs the worker until ctx ends: it sends the due states one at a time, at most one
// per Interval.
func (r *Reporter) Start(ctx context.Context) error {
	r.init()
	log := ctrl.LoggerFrom(ctx).WithName("commitstatus")
	ctx = ctrl.LoggerInto(ctx, log)
	tick := time.NewTicker(r.interval())
	defer tick.Stop()
	for {
		key, st, wait := r.due()
		if wait == 0 {
			r.send(ctx, key, st)
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-r.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// idleWait is how long the worker sleeps when nothing is due and nothing is scheduled.
const idleWait = time.Minute

// due returns the context to send now, or how long to wait until one is due. Hosts take turns
// (round robin, in name order, after the host sent to last), so a host that never answers
// delays the others by at most one request; within a host the longest-waiting context goes
// first; a host in backoff sends nothing.
func (r *Reporter) due() (contextKey, Status, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	ready := map[string]contextKey{}
	wait := idleWait
	for k, e := range r.entries {
		if !e.pending() {
			continue
		}
		host := hostOf(e.want.Target)
		next := e.next
		if h := r.hosts[host]; h != nil && h.next.After(next) {
			next = h.next
		}
		if d := next.Sub(now); d > 0 {
			wait = min(wait, d)
			continue
		}
		if first, ok := ready[host]; !ok || e.since.Before(r.entries[first].since) {
			ready[host] = k
		}
	}
	if len(ready) == 0 {
		return contextKey{}, Status{}, wait
	}
	host := nextHost(slices.Sorted(maps.Keys(ready)), r.lastHost)
	r.lastHost = host
	return ready[host], r.entries[ready[host]].want, 0
}

// nextHost returns the first of the sorted hosts after last, else the first.
func nextHost(hosts []string, last string) string {
	for _, h := range hosts {
		if h > last {
			return h
		}
	}
	return hosts[0]
}

// noteHost records whether host answered: a host that did not is backed off, so that it
// costs one attempt per backoff period, not one per context.
func (r *Reporter) noteHost(host string, answered bool) {
	if answered {
		delete(r.hosts, host)
		return
	}
	h := r.hosts[host]
	if h == nil {
		h = &hostState{}
		r.hosts[host] = h
	}
	h.failures++
	h.next = r.now().Add(r.backoff(h.failures))
}

// pending reports whether the wanted state has not reached the forge yet.
func (e *entry) pending() bool {
	return e.sent == nil || *e.sent != e.want
}

// send sends st and records the outcome: on success the state is sent; on an invalid
// configuration it is retried slowly, every MaxBackoff (at once when the GitSource points
// elsewhere); on an error it is retried after a backoff, or the forge's Retry-After, which a
// newer state does not shorten (a forge that is down is not hammered).
func (r *Reporter) send(ctx context.Context, key contextKey, st Status) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	err := r.post(ctx, st)
	outcome := outcomeOf(err)
	updates.WithLabelValues(st.Target.Provider, outcome).Inc()
	r.mu.Lock()
	r.noteHost(hostOf(st.Target), !isUnanswered(err))
	e, ok := r.entries[key]
	if !ok {
		r.mu.Unlock()
		return
	}
	first := e.failed == nil || *e.failed != st || e.invalid != (outcome == OutcomeInvalid)
	regarding := e.regarding
	switch {
	case outcome == OutcomeSuccess && key.commit != "" && e.want == st:
		// A left commit's last state is on the forge: nothing more to send for it.
		delete(r.entries, key)
	case outcome == OutcomeSuccess:
		e.sent, e.failed, e.invalid, e.attempts, e.next, e.holdUntil = &st, nil, false, 0, time.Time{}, time.Time{}
	case outcome == OutcomeInvalid:
		e.failed, e.invalid, e.attempts, e.holdUntil = &st, true, 0, time.Time{}
		e.next = r.now().Add(r.maxBackoff())
	default:
		e.failed, e.invalid = &st, false
		e.attempts++
		e.next = r.now().Add(max(r.backoff(e.attempts), retryAfterOf(err)))
		e.holdUntil = r.now().Add(retryAfterOf(err))
	}
	r.mu.Unlock()
	r.announce(ctx, regarding, st, err, first)
}

// announce logs and emits the outcome of a send: each state that reaches the forge, and the
// first failure of a state.
func (r *Reporter) announce(ctx context.Context, regarding runtime.Object, st Status, err error, first bool) {
	log := ctrl.LoggerFrom(ctx)
	if err == nil {
		log.Info("Reported commit status", "context", st.Context, "commit", st.Commit, "state", st.State,
			"repository", st.Target.Repository)
		r.event(regarding, corev1.EventTypeNormal, ReportedReason, "Commit %s: %s %s: %s",
			st.Commit, st.Context, st.State, st.Description)
		return
	}
	if !first {
		return
	}
	log.Info("Commit status not reported", "context", st.Context, "commit", st.Commit, "state", st.State,
		"repository", st.Target.Repository, "reason", err.Error())
	r.event(regarding, corev1.EventTypeWarning, FailedReason, "Commit %s: %s %s not reported to %s %s: %v",
		st.Commit, st.Context, st.State, st.Target.Provider, st.Target.Repository, err)
}

func (r *Reporter) event(regarding runtime.Object, eventType, reason, format string, args ...any) {
	if r.Recorder == nil || regarding == nil {
		return
	}
	r.Recorder.Eventf(regarding, nil, eventType, reason, "ReportCommitStatus", format, args...)
}

// outcomeOf classifies the result of a send for the metric and the retry.
func outcomeOf(err error) string {
	var invalid *InvalidError
	switch {
	case err == nil:
		return OutcomeSuccess
	case errors.As(err, &invalid):
		return OutcomeInvalid
	default:
		return OutcomeError
	}
}

func (r *Reporter) init() {
	r.once.Do(func() {
		r.entries = map[contextKey]*entry{}
		r.hosts = map[string]*hostState{}
		r.wake = make(chan struct{}, 1)
		client := &http.Client{Timeout: r.timeout(), Transport: r.newTransport()}
		if r.HTTP != nil {
			*client = *r.HTTP
		}
		client.CheckRedirect = noRedirect
		next := client.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		client.Transport = boundedTransport{next: next}
		r.HTTP = client
	})
}

func (r *Reporter) backoff(attempts int) time.Duration {
	d := firstBackoff
	for i := 1; i < attempts && d < r.maxBackoff(); i++ {
		d *= 2
	}
	return min(d, r.maxBackoff())
}

func (r *Reporter) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reporter) interval() time.Duration { return orDefault(r.Interval, DefaultInterval) }
func (r *Reporter) timeout() time.Duration  { return orDefault(r.Timeout, DefaultTimeout) }
func (r *Reporter) maxBackoff() time.Duration {
	return orDefault(r.MaxBackoff, DefaultMaxBackoff)
}

func (r *Reporter) maxContexts() int {
	if r.MaxContexts > 0 {
		return r.MaxContexts
	}
	return DefaultMaxContexts
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
