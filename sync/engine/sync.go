package engine

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"

	cliobject "github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/manifests/probe"
	"github.com/convoy-gitops/convoy/sync/engine/memory"
)

// Result is what one Sync pass did. It is returned with the error of a failed pass too, so
// that the status can say how far the pass got.
type Result struct {
	// Phases reports every phase of the revision, in order.
	Phases []convoyv1alpha1.PhaseStatus
	// Inventory is the owner's new inventory: the objects applied so far, in phase order,
	// then the objects of the previous inventory not pruned (yet).
	Inventory []convoyv1alpha1.InventoryEntry
	// Available is true when every phase is available.
	Available bool
	// Changes counts the objects per apply action.
	Changes Changes
	// Pruned counts the objects deleted because they left the revision.
	Pruned int
	// Left are the entries the prune dropped without deleting their object, with the reason.
	Left []Left
	// Watched is set when every phase is available and every object of the revision is of a
	// kind the watch of the management cluster (Options.Watch) has synced: a change to any
	// of them will make an event, and no timer is needed to notice it.
	Watched bool
	// Stale is set when the pass applied management objects without reading them and the
	// owner's event count (memory.Options.Events) moved while it ran: the watch delivered a change
	// the pass may not have seen, and whose event may make no pass of its own (a controller
	// drops the events of an object while the engine applies it: AppliedByEngine). A
	// successful pass should then be followed by another soon.
	Stale bool

	previous                   []convoyv1alpha1.InventoryEntry
	applied                    []convoyv1alpha1.InventoryEntry
	pruned                     []convoyv1alpha1.InventoryEntry
	unwatched, appliedDirectly bool
	// objects counts the revision's objects.
	objects int
	// rules is the digest of the revision's probes (rulesDigest).
	rules [sha256.Size]byte
	// judged holds the verdicts of each phase found available, for Memory.Settle.
	judged []memory.JudgedPhase
}

// Changes counts applied objects per action.
type Changes struct {
	// Created counts objects that did not exist.
	Created int
	// Configured counts objects that were changed.
	Configured int
	// Unchanged counts objects that already matched and were not written.
	Unchanged int
	// TakenOver counts objects taken over from another tool (Target.AdoptFrom); each is
	// counted under one of the three above as well, by how its apply went.
	TakenOver int
}

// Written reports whether the pass wrote any object.
func (c Changes) Written() bool { return c.Created+c.Configured+c.TakenOver > 0 }

// String summarizes the counts, e.g. "2 created, 1 configured, 7 unchanged".
func (c Changes) String() string {
	s := fmt.Sprintf("%d created, %d configured, %d unchanged", c.Created, c.Configured, c.Unchanged)
	if c.TakenOver > 0 {
		s += fmt.Sprintf(", %d taken over", c.TakenOver)
	}
	return s
}

// Sync applies rev to t phase by phase and, once every phase is available, prunes what the
// previous inventory holds and rev does not. It returns a Waiting error when a phase is not
// available yet; later phases are then neither applied nor pruned. A pass that would repeat
// the owner's last settled pass returns its outcome at once (sync/engine/memory).
func (e *Engine) Sync(ctx context.Context, t *Target, rev *Revision, previous []convoyv1alpha1.InventoryEntry) (*Result, error) {
	rules := rev.probesDigest() // once per pass: every phase is judged under the same probes
	mark, settled := e.memory.Repeat(passOf(t, rev, rules, previous))
	if settled != nil {
		return e.repeated(settled, previous), nil
	}
	res, err := e.sync(ctx, t, rev, rules, previous)
	res.Stale = e.memory.Settle(mark, outcomeOf(res, err))
	return res, err
}

// passOf is what the memory is asked before a pass.
func passOf(t *Target, rev *Revision, rules [sha256.Size]byte, previous []convoyv1alpha1.InventoryEntry) memory.Pass {
	p := memory.Pass{Owner: t.owner(), Revision: rev.ID, Rules: rules, Previous: previous,
		Phases: make([]memory.Phase, len(rev.Phases))}
	for i := range rev.Phases {
		ph := &rev.Phases[i]
		p.Phases[i] = memory.Phase{Name: ph.Name, Class: ph.Class, Digests: ph.Digests, Complete: len(ph.Digests) == len(ph.Objects)}
	}
	return p
}

// repeated is the result of a pass that repeats the owner's settled pass: every object
// unchanged, the inventory as it was.
func (e *Engine) repeated(settled *memory.Settled, previous []convoyv1alpha1.InventoryEntry) *Result {
	appliedObjects.WithLabelValues(e.opts.Controller, convoyv1alpha1.InventoryClusterManagement, ssa.UnchangedAction.String()).
		Add(float64(settled.Objects))
	return &Result{Phases: settled.Phases, Inventory: slices.Clone(previous), Available: true, Watched: true,
		Changes: Changes{Unchanged: settled.Objects}}
}

// outcomeOf is what the memory is told after a pass that returned res and err. It is clean
// when every phase is available and watched, nothing was pruned and no entry of the previous
// inventory was left behind (an object being deleted, one it could not delete, a kind no watch
// sees).
func outcomeOf(res *Result, err error) memory.Outcome {
	return memory.Outcome{
		Clean: err == nil && res.Available && res.Watched && res.Pruned == 0 && len(res.Left) == 0 &&
			len(res.Inventory) == len(res.applied),
		Objects: res.objects, Phases: res.Phases, Inventory: res.Inventory, AppliedDirectly: res.appliedDirectly,
		Judged: res.judged,
	}
}

// logApplied logs a pass that wrote objects: a revision applied for the first time, or
// objects changed since the last pass put back. A pass that finds every object as it wants it
// (a settled or repeated pass, a Waiting requeue) logs nothing.
func logApplied(ctx context.Context, rev *Revision, res *Result) {
	if res.Changes.Written() {
		ctrl.LoggerFrom(ctx).Info("Applied revision", "revision", rev.ID,
			"objects", res.Changes.Created+res.Changes.Configured, "changes", res.Changes.String())
	}
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
	err := e.syncPhases(ctx, t, rev, res)
	logApplied(ctx, rev, res)
	if err != nil {
		return res, err
	}
	res.Available = true
	res.Watched = !res.unwatched
	return res, e.prune(ctx, t, rev, res)
}

// syncPhases applies and judges the phases in order, up to the first that is not available.
func (e *Engine) syncPhases(ctx context.Context, t *Target, rev *Revision, res *Result) error {
	for i := range rev.Phases {
		available, err := e.syncPhase(ctx, t, rev, i, res)
		if err != nil {
			return err
		}
		if !available {
			ph := res.Phases[i]
			return pass.Waitf(convoyv1alpha1.ProbeFailedReason, e.opts.ProbeInterval,
				"phase %q not available: %s", ph.Name, ph.Message)
		}
	}
	return nil
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
	r.Changes.TakenOver += out.changes.TakenOver
	r.Changes.Unchanged += out.changes.Unchanged
}

// mergeInventory sets Inventory, unless prune already did: the applied objects, then the
// previous ones not applied in this pass.
func (r *Result) mergeInventory() {
	if r.Inventory == nil {
		r.Inventory = mergeInventories(r.applied, r.previous)
	}
}

// probesDigest returns the digest of the revision's probes.
func (r *Revision) probesDigest() [sha256.Size]byte {
	if r.ProbesDigest != (manifests.Digest{}) {
		return r.ProbesDigest
	}
	return rulesDigest(r.Probes)
}

// rulesDigest identifies the probe rules an object is judged under.
func rulesDigest(rules []probe.Rule) [sha256.Size]byte { return probe.Digest(rules) }

// NeedsHostedCluster reports whether a phase with objects lands in the hosted cluster.
func (r *Revision) NeedsHostedCluster() bool {
	for _, ph := range r.Phases {
		if ph.Class == convoyv1alpha1.ClassHostedCluster && len(ph.Objects) > 0 {
			return true
		}
	}
	return false
}

// entryFor returns the inventory entry of an applied object.
func entryFor(c *cluster, phase string, obj *unstructured.Unstructured) convoyv1alpha1.InventoryEntry {
	return convoyv1alpha1.InventoryEntry{
		ID:      cliobject.UnstructuredToObjMetadata(obj).String(),
		Version: obj.GroupVersionKind().Version,
		Cluster: c.name,
		Phase:   phase,
	}
}

// cluster returns the cluster of a phase class.
func (t *Target) cluster(class string) *cluster {
	if class == convoyv1alpha1.ClassHostedCluster {
		return &cluster{name: convoyv1alpha1.InventoryClusterHosted, client: t.Hosted, target: t}
	}
	return &cluster{name: convoyv1alpha1.InventoryClusterManagement, client: t.Management, target: t}
}

// clusterNamed returns the cluster of an inventory entry's cluster name.
func (t *Target) clusterNamed(name string) *cluster {
	if name == convoyv1alpha1.InventoryClusterHosted {
		return t.cluster(convoyv1alpha1.ClassHostedCluster)
	}
	return t.cluster(convoyv1alpha1.ClassManagement)
}

// cluster is one side of a target.
type cluster struct {
	// name is the inventory cluster name: "management" or "hosted".
	name   string
	client client.Client
	target *Target
	// previous is the owner's previous inventory, when a pass applies to the cluster: what
	// it holds is known to exist (create.go).
	previous []convoyv1alpha1.InventoryEntry
}

func (c *cluster) hosted() bool { return c.name == convoyv1alpha1.InventoryClusterHosted }

// owns reports whether obj carries this target's ownership labels.
func (c *cluster) owns(obj client.Object) bool {
	l := obj.GetLabels()
	return l[convoyv1alpha1.PackageNameLabel] == c.target.Name &&
		l[convoyv1alpha1.PackageNamespaceLabel] == c.target.Namespace &&
		l[convoyv1alpha1.OwnerKindLabel] == c.target.Kind
}

// owner is the owner of a target, as the memory names it.
func (t *Target) owner() memory.Owner {
	return memory.Owner{Kind: t.Kind, Namespace: t.Namespace, Name: t.Name, Shard: t.Shard}
}

// memoryCluster is c as the memory sees it, judged under rules.
func (c *cluster) memoryCluster(rules [sha256.Size]byte) memory.Cluster {
	return memory.Cluster{Owner: c.target.owner(), Hosted: c.hosted(), Reader: c.client, Rules: rules, Previous: c.previous}
}
