package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/sync/engine/memory"
)

// ownerGroup is the prefix of the ownership labels, as fluxcd/pkg/ssa names it.
const ownerGroup = "convoy.dev"

// writeStage reads, checks ownership of and applies the prepared objects of a stage that are
// not quiet.
func (e *Engine) writeStage(ctx context.Context, c *cluster, ph *Phase, states []desiredState, out *phaseOutcome) error {
	changed, rest := splitDirect(states)
	fresh, rest := splitFresh(rest)
	if err := out.observer.prefetch(ctx, objectsOf(rest), e.opts.Concurrency); err != nil {
		return c.classify(err)
	}
	if err := c.checkOwnership(ph, objectsOf(rest), out.observer); err != nil {
		return e.refuseStage(ctx, c, ph, states, out, err)
	}
	existed, err := e.createFresh(ctx, c, ph, fresh, out)
	if err != nil {
		return e.refuseStage(ctx, c, ph, states, out, err)
	}
	rest = append(rest, existed...)
	out.objects = append(out.objects, objectsOf(states)...)
	refused, err := e.applyDirect(ctx, c, changed, ssa.ConfiguredAction, out)
	if err != nil {
		return err
	}
	// An object applied without a read shows whether its old owner came back in the answer.
	if err := c.checkContested(ph, objectsOf(changed), out.observer.live); err != nil {
		return err
	}
	// Objects the API server refused (an immutable field, a replaced object) go the full way.
	if err := e.readRefused(ctx, c, ph, refused, out); err != nil {
		return err
	}
	rest = append(rest, refused...)
	return e.applyRead(ctx, c, rest, out)
}

// refuseStage returns the refusal of a stage in which an object is not this owner's (err, a
// collision), naming every such object of the stage in its order, as a pass that read them
// all would: it first reads the objects the memory let the stage apply without a read, save
// those the stage created (and deleted again). Any other error it returns as it is.
func (e *Engine) refuseStage(ctx context.Context, c *cluster, ph *Phase, states []desiredState, out *phaseOutcome, err error) error {
	var collision *pass.Stalling
	//nolint:errorlint // Only a bare collision: undoCreated joins another error to it when undoing fails.
	if !errors.As(err, &collision) || error(collision) != err || collision.Reason != convoyv1alpha1.CollisionReason {
		return err // not a collision, or one whose undoing failed too (undoCreated)
	}
	var all, unread []*unstructured.Unstructured
	for _, s := range states {
		if s.quiet || out.answered[keyOf(s.obj)] {
			continue
		}
		all = append(all, s.obj)
		if !out.observer.wasRead(s.obj) {
			unread = append(unread, s.obj)
		}
	}
	if err := out.observer.prefetch(ctx, unread, e.opts.Concurrency); err != nil {
		return c.classify(err)
	}
	return c.checkOwnership(ph, all, out.observer)
}

// splitDirect splits the states that are not quiet into those the memory marked to apply
// directly (Memory.Ask gave them the UID this owner applied them with) and the rest, which are
// read first.
func splitDirect(states []desiredState) (direct, rest []desiredState) {
	for _, s := range states {
		switch {
		case s.quiet:
		case s.uid != "":
			direct = append(direct, s)
		default:
			rest = append(rest, s)
		}
	}
	return direct, rest
}

// createFresh applies the fresh states create-only and returns those that exist after all,
// read and with their ownership checked. When the check refuses one, it deletes the objects it
// created and returns the refusal.
func (e *Engine) createFresh(ctx context.Context, c *cluster, ph *Phase, fresh []desiredState, out *phaseOutcome) ([]desiredState, error) {
	existed, err := e.applyDirect(ctx, c, fresh, ssa.CreatedAction, out)
	if err != nil {
		return nil, err
	}
	if len(existed) == 0 {
		return nil, nil
	}
	if err := e.readRefused(ctx, c, ph, existed, out); err != nil {
		return nil, e.undoCreated(ctx, c, created(fresh, existed), out, err)
	}
	return existed, nil
}

// readRefused reads the objects a direct apply refused and checks their ownership again.
func (e *Engine) readRefused(ctx context.Context, c *cluster, ph *Phase, refused []desiredState, out *phaseOutcome) error {
	if err := out.observer.prefetch(ctx, objectsOf(refused), e.opts.Concurrency); err != nil {
		return c.classify(err)
	}
	return c.checkOwnership(ph, objectsOf(refused), out.observer)
}

// applyRead applies objects read by prefetch: the absent ones directly, the present ones not
// as this owner left them through the resource manager (dry-run, then apply if they differ),
// once those another tool holds are taken over (takeOver).
func (e *Engine) applyRead(ctx context.Context, c *cluster, states []desiredState, out *phaseOutcome) error {
	if err := e.takeOver(ctx, c, states, out); err != nil {
		return err
	}
	var absent, present []desiredState
	for _, s := range states {
		live := out.observer.existing(s.obj)
		switch {
		case live == nil:
			absent = append(absent, s)
		case s.recorded != (memory.Observed{}) && s.recorded == observedOf(live):
			out.changes.Unchanged++ // untouched: as this owner left it
			appliedObjects.WithLabelValues(e.opts.Controller, c.name, ssa.UnchangedAction.String()).Inc()
		default:
			present = append(present, s)
		}
	}
	if len(absent) > 0 {
		e.applying(out, absent)
	}
	if _, err := e.applyDirect(ctx, c, absent, ssa.CreatedAction, out); err != nil {
		return err
	}
	rm := ssa.NewResourceManager(out.observer, nil, ssa.Owner{Field: FieldManager, Group: ownerGroup})
	rm.SetConcurrency(e.opts.Concurrency)
	cs, err := rm.ApplyAll(ctx, objectsOf(present), e.applyOptions())
	if err != nil {
		return c.classify(err)
	}
	out.changes.add(cs, e.opts.Controller, c.name)
	return nil
}

// applyDirect applies objects without reading them first, one by one in fluxcd/pkg/ssa's kind
// order, and counts them under action. Changed objects (action Configured) that the API server
// refuses (invalid: an immutable field; a conflict or not found: the object was deleted or
// replaced since this owner applied it) are returned for the caller to read and handle; other
// errors stop the stage. So are created objects (action Created) applied create-only that
// exist after all.
//
// Note: the resource manager would read and dry-run these objects first, only to learn that
// they are new or changed; a direct apply is one request instead of three. The cost is that an
// invalid object is refused after the valid ones before it were written, instead of before
// anything is.
func (e *Engine) applyDirect(ctx context.Context, c *cluster, states []desiredState, action ssa.Action, out *phaseOutcome) ([]desiredState, error) {
	sort.Sort(byKindOrder(states))
	out.appliedDirectly = out.appliedDirectly || (len(states) > 0 && !c.hosted())
	var refused []desiredState
	for _, s := range states {
		err := applyOne(ctx, s, out.observer)
		switch {
		case action == ssa.ConfiguredAction && refusedDirectApply(err),
			s.createOnly && refusedCreate(err):
			out.forgotten[keyOf(s.obj)] = true
			s.uid, s.createOnly = "", false
			refused = append(refused, s)
			continue
		case err != nil:
			return nil, c.classify(fmt.Errorf("%s apply failed: %w", describe(s.obj), err))
		}
		out.answered[keyOf(s.obj)] = true
		if action == ssa.CreatedAction {
			out.changes.Created++
		} else {
			out.changes.Configured++
		}
		appliedObjects.WithLabelValues(e.opts.Controller, c.name, action.String()).Inc()
	}
	return refused, nil
}

// applyOne applies the object of s as it is. The observer keeps the live state the answer
// gives (applyOwned). The memory holds the apply in flight from its advice (Memory.Ask) or
// applying, until the stage tells it the answer (tell).
func applyOne(ctx context.Context, s desiredState, obs *observer) error {
	applied := s.obj.DeepCopy()
	applied.SetUID(s.uid)
	if s.createOnly {
		applied.SetResourceVersion(createOnlyVersion)
	}
	ssautils.RemoveCABundleFromCRD(applied)
	_, err := obs.applyOwned(ctx, applied, client.ForceOwnership, client.FieldOwner(FieldManager))
	return err
}

// applying tells the memory that the objects of states, found absent by a read, are about to
// be created without another: their applies are in flight until the stage tells their
// answers.
func (e *Engine) applying(out *phaseOutcome, states []desiredState) {
	stage := make([]memory.Desired, len(states))
	for i := range states {
		stage[i] = desiredOf(&states[i])
	}
	e.memory.Applying(out.at, stage)
}

// refusedDirectApply reports the errors of a direct apply that the full way may overcome.
func refusedDirectApply(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err)
}

// applyOptions: never force-recreate, except objects annotated convoy.dev/force: "true".
func (e *Engine) applyOptions() ssa.ApplyOptions {
	opts := ssa.DefaultApplyOptions()
	opts.ForceSelector = map[string]string{convoyv1alpha1.ForceAnnotation: "true"}
	opts.WaitInterval = establishPoll
	return opts
}

// add counts the entries of a change set.
func (c *Changes) add(cs *ssa.ChangeSet, controller, cluster string) {
	for _, e := range cs.Entries {
		switch e.Action {
		case ssa.CreatedAction:
			c.Created++
		case ssa.ConfiguredAction:
			c.Configured++
		default:
			c.Unchanged++
		}
		appliedObjects.WithLabelValues(controller, cluster, e.Action.String()).Inc()
	}
}

// maxNamed bounds how many objects one message names.
const maxNamed = 5

// checkOwnership refuses to apply over existing objects that are not this owner's, unless
// the desired object asks for adoption with convoy.dev/adopt: "true" or the only owners are
// tools the target adopts from (Target.AdoptFrom). An object of this owner that a tool it was
// taken over from applies again is refused too (checkContested).
func (c *cluster) checkOwnership(ph *Phase, objs []*unstructured.Unstructured, obs *observer) error {
	if err := c.checkContested(ph, objs, obs.existing); err != nil {
		return err
	}
	var refused []string
	for _, obj := range objs {
		live := obs.existing(obj)
		if live == nil || c.owns(live) || adopts(obj) {
			continue
		}
		claims := c.claimsOn(live)
		if c.takesOver(claims) {
			continue
		}
		refused = append(refused, fmt.Sprintf("%s (%s)", describe(obj), describeClaims(claims)))
	}
	if len(refused) == 0 {
		return nil
	}
	return pass.Stallf(convoyv1alpha1.CollisionReason,
		"phase %q: refusing to take over %s in the %s cluster: %s; annotate the object %s: \"true\" in the manifest, "+
			"or name its owner in spec.adopt.from (flux, package-operator) when it is the only one, to adopt it",
		ph.Name, plural(len(refused), "an existing object", "existing objects"), c.name,
		nameList(refused), convoyv1alpha1.AdoptAnnotation)
}

// adopts reports a desired object annotated convoy.dev/adopt: "true".
func adopts(obj *unstructured.Unstructured) bool {
	return strings.EqualFold(obj.GetAnnotations()[convoyv1alpha1.AdoptAnnotation], "true")
}

// ownerOf says who manages a live object.
func ownerOf(live *unstructured.Unstructured) string {
	l := live.GetLabels()
	name, ns := l[convoyv1alpha1.PackageNameLabel], l[convoyv1alpha1.PackageNamespaceLabel]
	if name == "" {
		return "not managed by convoy"
	}
	kind := l[convoyv1alpha1.OwnerKindLabel]
	if kind == "" {
		kind = "Package"
	}
	return fmt.Sprintf("managed by %s %s/%s", kind, ns, name)
}

// nameList joins names, eliding past maxNamed.
func nameList(names []string) string {
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// objectsOf returns the objects of states.
func objectsOf(states []desiredState) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(states))
	for i, s := range states {
		out[i] = s.obj
	}
	return out
}

// byKindOrder sorts desired states in fluxcd/pkg/ssa's apply order.
type byKindOrder []desiredState

func (b byKindOrder) Len() int { return len(b) }

func (b byKindOrder) Swap(i, j int) { b[i], b[j] = b[j], b[i] }

func (b byKindOrder) Less(i, j int) bool {
	return ssa.SortableUnstructureds{b[i].obj, b[j].obj}.Less(0, 1)
}
