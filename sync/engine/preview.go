package engine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Preview is what a Sync of a revision would do, found without writing anything: every object
// is read and applied with a server-side dry run (dryRun=All), and the previous inventory is
// read to find what a prune would delete.
type Preview struct {
	// Phases of the revision, in order.
	Phases []PhasePreview
	// Pruned are the live objects of the previous inventory that a prune would delete.
	Pruned []PrunePreview
	// Left are the entries a prune would drop without deleting their object, and why.
	Left []Left
}

// PhasePreview is what applying one phase would do.
type PhasePreview struct {
	// Name and Class of the phase.
	Name, Class string
	// Objects of the phase, in order.
	Objects []ObjectPreview
}

// ObjectPreview is one object before and after a dry-run apply.
type ObjectPreview struct {
	// Live is the object as the cluster holds it; nil when it does not exist.
	Live *unstructured.Unstructured
	// Applied is the API server's answer to the dry-run apply: the object as it would be,
	// defaulted and admitted. It is the prepared object itself when its kind is not served yet
	// (a CustomResourceDefinition of the same revision would add it).
	Applied *unstructured.Unstructured
	// Refused says why a Sync would refuse the object (another owner's), if it would.
	Refused string
}

// PrunePreview is an object a prune would delete.
type PrunePreview struct {
	// Phase and Cluster of its inventory entry.
	Phase, Cluster string
	// Live is the object as the cluster holds it.
	Live *unstructured.Unstructured
}

// DryRun previews a Sync of rev to t after previous: each object of each phase is placed and
// labelled as Sync would, read, and applied with dryRun=All under convoy's field manager; the
// objects of previous that rev leaves out are read and judged as a prune would judge them.
// It only reads and dry-runs, so it never changes an object, and it neither waits for nor
// probes anything.
func DryRun(ctx context.Context, t *Target, rev *Revision, previous []convoyv1alpha1.InventoryEntry) (*Preview, error) {
	if err := checkRevision(t, rev); err != nil {
		return nil, err
	}
	p := &Preview{}
	var applied []convoyv1alpha1.InventoryEntry
	for i := range rev.Phases {
		ph := &rev.Phases[i]
		c := t.cluster(ph.Class)
		pp := PhasePreview{Name: ph.Name, Class: ph.Class}
		for _, desired := range ph.Objects {
			op, err := c.dryRunOne(ctx, ph, desired.DeepCopy())
			if err != nil {
				return nil, err
			}
			pp.Objects = append(pp.Objects, op)
			applied = append(applied, entryFor(c, ph.Name, op.Applied))
		}
		p.Phases = append(p.Phases, pp)
	}
	return p, p.previewPrune(ctx, t, subtract(previous, applied))
}

// dryRunOne places, reads and dry-run applies one object (a copy).
func (c *cluster) dryRunOne(ctx context.Context, ph *Phase, obj *unstructured.Unstructured) (ObjectPreview, error) {
	setLabels(obj, c.labels())
	namespaced, err := c.client.IsObjectNamespaced(obj)
	if isNoMatch(err) {
		return ObjectPreview{Applied: obj}, nil
	}
	if err != nil {
		return ObjectPreview{}, c.classify(err)
	}
	ns, err := c.placement(ph, obj, namespaced)
	if err != nil {
		return ObjectPreview{}, err
	}
	obj.SetNamespace(ns)
	out := ObjectPreview{Applied: obj}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	switch err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), live); {
	case err == nil:
		out.Live = live
		if claims := c.claimsOn(live); !c.owns(live) && !adopts(obj) && !c.takesOver(claims) {
			out.Refused = fmt.Sprintf("%s exists and is not this owner's (%s)", describe(obj), describeClaims(claims))
			return out, nil
		}
	case !apierrors.IsNotFound(err):
		return out, fmt.Errorf("reading %s: %w", describe(obj), err)
	}
	dry := obj.DeepCopy()
	if err := c.client.Patch(ctx, dry, client.Apply, client.DryRunAll, client.ForceOwnership, client.FieldOwner(FieldManager)); err != nil {
		return out, fmt.Errorf("dry-run apply of %s in the %s cluster: %w", describe(obj), c.name, err)
	}
	out.Applied = dry
	return out, nil
}

// previewPrune reads the stale entries in reverse phase order and records the objects a prune
// would delete or leave.
func (p *Preview) previewPrune(ctx context.Context, t *Target, stale []convoyv1alpha1.InventoryEntry) error {
	for i := len(stale) - 1; i >= 0; i-- {
		entry := stale[i]
		c := t.clusterNamed(entry.Cluster)
		if c.client == nil {
			continue
		}
		meta, err := metadataFor(entry)
		if err != nil {
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(meta.GroupVersionKind())
		err = c.client.Get(ctx, client.ObjectKeyFromObject(meta), live)
		switch {
		case isNoMatch(err):
			p.Left = append(p.Left, Left{ID: entry.ID, Cluster: entry.Cluster, Why: leftKindGone})
			continue
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("reading %s in the %s cluster: %w", entry.ID, entry.Cluster, err)
		}
		switch {
		case !c.owns(live) || pruneDisabled(live) || reclaimed(live):
		case isDefinitionKind(live.GroupVersionKind().GroupKind()) && !pruneEnabled(live):
			p.Left = append(p.Left, Left{ID: entry.ID, Cluster: entry.Cluster, Why: leftDefinition})
		default:
			p.Pruned = append(p.Pruned, PrunePreview{Phase: entry.Phase, Cluster: entry.Cluster, Live: live})
		}
	}
	return nil
}
