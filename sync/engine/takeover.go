package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/ssa"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// takeOver moves the read objects of states that another tool of spec.adopt.from holds to
// this owner, one JSON patch each, before they are applied: the patch carries this owner's
// labels and convoy.dev/adopted-from, removes the tool's labels, owner references and owners
// annotation, and hands the tool's managed fields to convoy's field manager, so that the
// apply that follows owns every field the tool applied (and drops those Git no longer has)
// and neither side can prune the other afterwards. The object keeps its UID and its spec: a
// Deployment's pod template is not touched, so no ReplicaSet is made.
//
// Note: one patch moves the ownership at once; at no moment is the object without an owner,
// and a patch that fails leaves it as it was. It is guarded by the UID and resourceVersion
// read, so a write of the old owner in between fails it (retried on the next pass).
func (e *Engine) takeOver(ctx context.Context, c *cluster, states []desiredState, out *phaseOutcome) error {
	if len(c.target.AdoptFrom) == 0 {
		return nil
	}
	for _, s := range states {
		live := out.observer.existing(s.obj)
		if live == nil {
			continue
		}
		claims := c.claimsOn(live)
		if !c.takesOver(claims) {
			continue
		}
		ops, err := c.takeoverPatch(live, s.obj, claims)
		if err != nil {
			return err
		}
		raw, err := marshalPatch(ops)
		if err != nil {
			return err
		}
		taken := live.DeepCopy()
		if err := c.client.Patch(ctx, taken, client.RawPatch(types.JSONPatchType, raw), client.FieldOwner(FieldManager)); err != nil {
			return c.classify(fmt.Errorf("taking over %s (%s): %w", describe(s.obj), describeClaims(claims), err))
		}
		out.observer.reread(taken)
		out.changes.TakenOver++
	}
	return nil
}

// takeoverPatch returns the operations that move live from the tools of claims to this owner,
// which applies desired.
func (c *cluster) takeoverPatch(live, desired *unstructured.Unstructured, claims []claim) ([]jsonPatchOp, error) {
	ops := []jsonPatchOp{
		{Op: "test", Path: "/metadata/uid", Value: string(live.GetUID())},
		{Op: "test", Path: "/metadata/resourceVersion", Value: live.GetResourceVersion()},
	}
	var tools []string
	for _, cl := range claims {
		if !slices.Contains(tools, string(cl.tool)) {
			tools = append(tools, string(cl.tool))
		}
	}
	slices.Sort(tools)
	labels := map[string]string{}
	for k, v := range live.GetLabels() {
		if !slices.Contains(toolLabels, k) {
			labels[k] = v
		}
	}
	for k, v := range c.labels() {
		labels[k] = v
	}
	labels[convoyv1alpha1.AdoptedFromLabel] = strings.Join(tools, ".")
	ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/labels", Value: labels})
	if _, ok := live.GetAnnotations()[pkoOwnersAnnotation]; ok {
		ops = append(ops, jsonPatchOp{Op: "remove", Path: "/metadata/annotations/" + pointer(pkoOwnersAnnotation)})
	}
	ops = append(ops, ownerReferencesOps(live)...)
	managed, err := managedFieldsOps(live, desired)
	if err != nil {
		return nil, err
	}
	return append(ops, managed...), nil
}

// toolLabels are the labels of the tools convoy takes objects over from. Of their
// annotations only Package Operator's owners annotation goes, the hold of an owner in another
// cluster (a Deployment's generation moves once with it, its pod template does not): its
// revision annotation, which orders ObjectSets and holds nothing, stays, since a Deployment's
// generation (and its controller's work) moves with any change of annotations.
var toolLabels = []string{fluxNameLabel, fluxNamespaceLabel, pkoCacheLabel}

// ownerReferencesOps removes Package Operator's owner references of live, keeping the others.
func ownerReferencesOps(live *unstructured.Unstructured) []jsonPatchOp {
	refs := live.GetOwnerReferences()
	kept := slices.DeleteFunc(slices.Clone(refs), isPKOOwner)
	switch {
	case len(kept) == len(refs):
		return nil
	case len(kept) == 0:
		return []jsonPatchOp{{Op: "remove", Path: "/metadata/ownerReferences"}}
	}
	return []jsonPatchOp{{Op: "replace", Path: "/metadata/ownerReferences", Value: kept}}
}

// managedFieldsOps hands the fields the tools' field managers own (applied or updated) to
// convoy's apply field manager, merged with what it owns already: its next apply drops those
// Git no longer has.
func managedFieldsOps(live, desired *unstructured.Unstructured) ([]jsonPatchOp, error) {
	var managers []ssa.FieldManager
	for _, name := range []string{fluxFieldManager, pkoFieldManager} {
		for _, op := range []metav1.ManagedFieldsOperationType{metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate} {
			managers = append(managers, ssa.FieldManager{Name: name, ExactMatch: true, OperationType: op})
		}
	}
	live, err := withoutDroppedAnnotations(live, desired)
	if err != nil {
		return nil, err
	}
	patches, err := ssa.PatchReplaceFieldsManagers(live, managers, FieldManager)
	if err != nil {
		return nil, fmt.Errorf("handing over the managed fields of %s: %w", describe(live), err)
	}
	ops := make([]jsonPatchOp, len(patches))
	for i, p := range patches {
		ops[i] = jsonPatchOp{Op: p.Operation, Path: p.Path, Value: p.Value}
	}
	return ops, nil
}

// checkContested refuses objects convoy took over whose old owner's marks are back (states
// whose live objects the pass read or wrote): the old owner applies them still, and writing
// over it in turn would be a loop.
func (c *cluster) checkContested(ph *Phase, objs []*unstructured.Unstructured, live func(*unstructured.Unstructured) *unstructured.Unstructured) error {
	var contested []string
	for _, obj := range objs {
		l := live(obj)
		if l == nil {
			continue
		}
		if cl, ok := c.contestedBy(l); ok {
			contested = append(contested, fmt.Sprintf("%s (%s)", describe(obj), cl.owner))
		}
	}
	if len(contested) == 0 {
		return nil
	}
	// Note: what clears it is a label removed from the objects. The management cluster's watches
	// see that, but nothing watches a hosted cluster's objects: it is looked at again at the
	// success interval too.
	return pass.StallRecheckf(convoyv1alpha1.TakeoverContestedReason,
		"phase %q: the previous owner applies %s in the %s cluster again after convoy took %s over: %s; "+
			"stop it (suspend the Flux Kustomization, pause the Package Operator object), then remove the label %s from %s",
		ph.Name, plural(len(contested), "an object", "objects"), c.name, plural(len(contested), "it", "them"),
		nameList(contested), convoyv1alpha1.AdoptedFromLabel, plural(len(contested), "it", "them"))
}

// withoutDroppedAnnotations returns live with the annotations desired does not carry left out
// of the tools' fields (Package Operator's revision, convoy's phase annotation that Flux
// applied from the package's files): handed to convoy's field manager, they would go with its
// next apply, and with them a Deployment's generation, which moves with any change of
// annotations. They stay, held by no one.
func withoutDroppedAnnotations(live, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	kept := desired.GetAnnotations()
	var dropped []fieldpath.Path
	for k := range live.GetAnnotations() {
		if _, ok := kept[k]; !ok {
			dropped = append(dropped, fieldpath.MakePathOrDie("metadata", "annotations", k))
		}
	}
	if len(dropped) == 0 {
		return live, nil
	}
	leave := fieldpath.NewSet(dropped...)
	entries := live.GetManagedFields()
	for i, e := range entries {
		if (e.Manager != fluxFieldManager && e.Manager != pkoFieldManager) || e.FieldsV1 == nil {
			continue
		}
		set, err := ssa.FieldsToSet(*e.FieldsV1)
		if err != nil {
			return nil, fmt.Errorf("reading the managed fields of %s: %w", describe(live), err)
		}
		fields, err := ssa.SetToFields(*set.Difference(leave))
		if err != nil {
			return nil, fmt.Errorf("writing the managed fields of %s: %w", describe(live), err)
		}
		entries[i].FieldsV1 = &fields
	}
	out := live.DeepCopy()
	out.SetManagedFields(entries)
	return out, nil
}
