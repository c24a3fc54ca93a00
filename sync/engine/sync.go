package engine

import (
	"context"
	"crypto/sha256"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// Sync applies rev to t phase by phase and, once every phase is available, prunes what the
// previous inventory holds and rev does not. It returns a Waiting error when a phase is not
// available yet; later phases are then neither applied nor pruned. A pass that would repeat
// the owner's last settled pass returns its outcome at once (settled.go).
func (e *Engine) Sync(ctx context.Context, t *Target, rev *Revision, previous []convoyv1alpha1.InventoryEntry) (*Result, error) {
	rules := rev.probesDigest()            // once per pass: every phase is judged under the same probes
	mark := e.memory.markOf(t, rev, rules) // before the pass looks at any object
	if res, ok := e.memory.repeat(mark, previous); ok {
		return res, nil
	}
	e.memory.forgetSettled(mark.owner) // whatever this pass does, even if it panics, the last settled one is past
	res, err := e.sync(ctx, t, rev, rules, previous)
	res.Stale = res.appliedDirectly && e.memory.movedSince(t, mark)
	if settledOutcome(res, err) {
		e.memory.remember(mark, res)
	}
	return res, err
}

// sync is one pass of Sync in full.
func (e *Engine) sync(ctx context.Context, t *Target, rev *Revision, rules [sha256.Size]byte, previous []convoyv1alpha1.InventoryEntry) (*Result, error) {
	res := newResult(rev, previous)
	defer res.mergeInventory()
	if err := checkNotEmpty(rev, previous); err != nil {
		return res, err
	}
	if err := checkRevision(t, rev); err != nil {
		return res, err
	}
	res.rules = rules
	for i := range rev.Phases {
		available, err := e.syncPhase(ctx, t, rev, i, res)
		if err != nil {
			return res, err
		}
		if !available {
			ph := res.Phases[i]
			return res, pass.Waitf(convoyv1alpha1.ProbeFailedReason, e.opts.ProbeInterval,
				"phase %q not available: %s", ph.Name, ph.Message)
		}
	}
	res.Available = true
	res.Watched = !res.unwatched
	return res, e.prune(ctx, t, res)
}

// syncPhase applies phase i and judges it; it records both in res.
func (e *Engine) syncPhase(ctx context.Context, t *Target, rev *Revision, i int, res *Result) (bool, error) {
	ph := &rev.Phases[i]
	c := t.cluster(ph.Class)
	out, err := e.applyPhase(ctx, c, ph, res.rules)
	res.record(c, ph, out)
	if err != nil {
		res.Phases[i].Message = err.Error()
		markWaiting(res.Phases[i+1:], ph.Name)
		return false, err
	}
	available, msg := judgePhase(rev.Probes, out)
	res.Phases[i].Available, res.Phases[i].Message = available, msg
	if available {
		e.memory.recordVerdicts(c, out, res)
	} else {
		probeFailures.WithLabelValues(e.opts.Controller, c.name).Inc()
		markWaiting(res.Phases[i+1:], ph.Name)
	}
	return available, nil
}

// checkNotEmpty refuses a revision without objects: applying it would prune every object of
// the previous one, which is what a mistaken commit (a moved directory, a broken template
// guard) looks like. Removing everything a Package applied is done by deleting the Package.
func checkNotEmpty(rev *Revision, previous []convoyv1alpha1.InventoryEntry) error {
	for _, ph := range rev.Phases {
		if len(ph.Objects) > 0 {
			return nil
		}
	}
	return pass.Stallf(convoyv1alpha1.EmptyRevisionReason,
		"revision %s renders no objects: refusing to apply it, as it would prune all %d %s of the inventory; delete the owner to remove them",
		rev.ID, len(previous), plural(len(previous), "object", "objects"))
}

// checkRevision refuses, before anything is applied, what no pass could apply: an owner name
// that is no label value, a revision that needs a missing hosted cluster, management objects
// that name another namespace.
func checkRevision(t *Target, rev *Revision) error {
	if errs := validation.IsValidLabelValue(t.Name); len(errs) > 0 {
		return pass.Stallf(convoyv1alpha1.InvalidSpecReason,
			"name %q cannot be used in ownership labels: %s", t.Name, errs[0])
	}
	if rev.NeedsHostedCluster() && t.Hosted == nil {
		if t.HostedUnavailable != nil {
			return t.HostedUnavailable
		}
		return pass.Stallf(convoyv1alpha1.HostedClusterNotFoundReason,
			"the revision has hosted-cluster phases and namespace %s has no hosted cluster", t.Namespace)
	}
	for _, ph := range rev.Phases {
		if ph.Class != convoyv1alpha1.ClassManagement {
			continue
		}
		for _, obj := range ph.Objects {
			if ns := obj.GetNamespace(); ns != "" && ns != t.Namespace {
				return forbiddenNamespace(t, &ph, obj)
			}
		}
	}
	return nil
}

// newResult returns a Result with one not-yet-available status per phase.
func newResult(rev *Revision, previous []convoyv1alpha1.InventoryEntry) *Result {
	res := &Result{previous: previous, Phases: make([]convoyv1alpha1.PhaseStatus, len(rev.Phases))}
	for i, ph := range rev.Phases {
		res.Phases[i] = convoyv1alpha1.PhaseStatus{Name: ph.Name, Class: ph.Class, Objects: int32(len(ph.Objects))}
		res.objects += len(ph.Objects)
	}
	return res
}

// record adds what applying a phase did to the result.
func (r *Result) record(c *cluster, ph *Phase, out *phaseOutcome) {
	if out == nil {
		return
	}
	for _, obj := range out.objects {
		r.applied = append(r.applied, entryFor(c, ph.Name, obj))
	}
	r.unwatched = r.unwatched || out.unwatched
	r.appliedDirectly = r.appliedDirectly || out.appliedDirectly
	r.Changes.Created += out.changes.Created
	r.Changes.Configured += out.changes.Configured
	r.Changes.Unchanged += out.changes.Unchanged
}

// mergeInventory sets Inventory, unless prune already did: the applied objects, then the
// previous ones not applied in this pass.
func (r *Result) mergeInventory() {
	if r.Inventory == nil {
		r.Inventory = mergeInventories(r.applied, r.previous)
	}
}

// markWaiting marks the phases after an unavailable one.
func markWaiting(phases []convoyv1alpha1.PhaseStatus, blocking string) {
	for i := range phases {
		phases[i].Message = fmt.Sprintf("waiting for phase %q", blocking)
	}
}
