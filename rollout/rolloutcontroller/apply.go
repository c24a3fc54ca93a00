package rolloutcontroller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/rollout"
)

// stamp is what packageFor writes besides the revision: the time the spec was set
// (SpecUpdatedAtAnnotation, left out when empty) and the hash of the template metadata
// (TemplateMetadataAnnotation, computed once per pass: Plan.TemplateMetadataHash), and the
// shard of the Package.
type stamp struct {
	specUpdatedAt, metadataHash string
	// shard is the convoy.dev/shard label (Sharding); empty leaves the template's labels alone.
	shard string
	// finalizer puts convoy's finalizer in the apply (withFinalizer).
	finalizer bool
}

// withFinalizer reports whether the apply of a Package carries convoy's finalizer: when the
// Package goes to the unsharded replica, which runs this controller and so reconciles it, and
// whenever the Package already has it.
//
// The Package controller would otherwise add it with a write of its own, a third write per
// Package on an install where the pin and the status are the floor. Once applied, it stays in
// every apply: server-side apply removes what a manager stops applying. A Package created on a
// shard gets it from the shard's replica, as before, so that a shard without a live replica
// never holds a Package that no pass touched (its deletion would wait for that replica). The API
// server refuses to add it back to a Package being deleted, so the teardown's removal stands.
func withFinalizer(shard string, pkg *convoyv1alpha1.Package) bool {
	return shard == "" || (pkg != nil && controllerutil.ContainsFinalizer(pkg, convoyv1alpha1.Finalizer))
}

// packageFor returns the apply configuration that pins the Package of change to its revision:
// the revision's template and commit, the HostedClusterPackage's template metadata, its label,
// its controller reference, st and, where st.finalizer says so, convoy's finalizer.
func packageFor(hcpkg *convoyv1alpha1.HostedClusterPackage, change rollout.Change, st stamp) (*unstructured.Unstructured, error) {
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&convoyv1alpha1.PackageSpec{
		PackageTemplateSpec: change.Revision.Template, Revision: change.Revision.Commit})
	if err != nil {
		return nil, fmt.Errorf("converting the Package spec: %w", err)
	}
	labels := maps.Clone(hcpkg.Spec.Template.Metadata.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[convoyv1alpha1.HostedClusterPackageLabel] = hcpkg.Name
	delete(labels, convoyv1alpha1.ShardLabel) // the controller's choice, never the template's
	if st.shard != "" {
		labels[convoyv1alpha1.ShardLabel] = st.shard
	}
	annotations := maps.Clone(hcpkg.Spec.Template.Metadata.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	if st.metadataHash != "" {
		annotations[rollout.TemplateMetadataAnnotation] = st.metadataHash
	}
	if st.specUpdatedAt != "" {
		annotations[rollout.SpecUpdatedAtAnnotation] = st.specUpdatedAt
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(convoyv1alpha1.GroupVersion.WithKind("Package"))
	u.SetNamespace(change.Package.Namespace)
	u.SetName(change.Package.Name)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	u.SetOwnerReferences([]metav1.OwnerReference{ownerReference(hcpkg)})
	if st.finalizer {
		u.SetFinalizers([]string{convoyv1alpha1.Finalizer})
	}
	return u, nil
}

// ownerReference makes hcpkg the controller of a Package or ControllerRevision.
func ownerReference(hcpkg *convoyv1alpha1.HostedClusterPackage) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: convoyv1alpha1.GroupVersion.String(), Kind: "HostedClusterPackage",
		Name: hcpkg.Name, UID: hcpkg.UID, Controller: &yes, BlockOwnerDeletion: &yes}
}

// applyChanges creates, updates and relabels the Packages of the plan with server-side apply,
// at most r.ApplyConcurrency at once, logs each (logApplied), and records what the cache must
// show before the next pass. A relabelled Package keeps its revision and the time its spec was set.
func (r *HostedClusterPackageReconciler) applyChanges(ctx context.Context, s *scope) error {
	changes := slices.Concat(s.plan.Creates, s.plan.Updates, s.plan.Relabels)
	now := rollout.FormatSpecUpdatedAt(s.now)
	var mu sync.Mutex
	applied := map[types.NamespacedName]int64{}
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(r.applyConcurrency())
	for _, change := range changes {
		eg.Go(func() error {
			st := stamp{specUpdatedAt: now, metadataHash: s.plan.TemplateMetadataHash,
				shard: shardOf(s.sharding, change, s.packages.byKey[change.Package])}
			st.finalizer = withFinalizer(st.shard, s.packages.byKey[change.Package])
			if change.Reason == rollout.RelabelReason {
				st.specUpdatedAt = s.packages.byKey[change.Package].Annotations[rollout.SpecUpdatedAtAnnotation]
			}
			u, err := packageFor(s.obj, change, st)
			if err != nil {
				return err
			}
			if pkg := s.packages.byKey[change.Package]; pkg != nil {
				u.SetUID(pkg.UID) // a precondition: never take over a Package recreated by someone else
			}
			answer, err := r.applyPackage(ctx, u)
			if err != nil {
				return fmt.Errorf("applying Package %s: %w", change.Package, err)
			}
			if st.shard == "" && shardLabelOf(s.packages.byKey[change.Package]) != "" {
				if err := r.removeShardLabel(ctx, answer); err != nil {
					return err
				}
			}
			logApplied(ctx, change, s.packages.byKey[change.Package])
			mu.Lock()
			applied[change.Package] = answer.GetGeneration()
			mu.Unlock()
			return nil
		})
	}
	err := eg.Wait()
	r.expect.set(s.obj.Name, applied)
	return err
}

// applyPackage applies u and returns the metadata of the Package the API server answers
// (pass.ApplyForMetadata): the generation and resourceVersion are all a pass needs of it, and
// the whole Package, its status included, costs the API server and the controller far more.
func (r *HostedClusterPackageReconciler) applyPackage(ctx context.Context, u *unstructured.Unstructured) (*metav1.PartialObjectMetadata, error) {
	return pass.ApplyForMetadata(ctx, r.Client, u, client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// logApplied logs a Package created, or pinned to another revision (before is the Package as the
// pass found it, nil when there was none); a relabel keeps the revision and is logged at V(1)
// only.
func logApplied(ctx context.Context, change rollout.Change, before *convoyv1alpha1.Package) {
	log := ctrl.LoggerFrom(ctx).WithValues("package", change.Package.String(), "cluster", change.HostedCluster,
		"partition", change.Partition, "revision", change.Revision.Name, "commit", change.Revision.Commit,
		"reason", string(change.Reason))
	switch {
	case before == nil:
		log.Info("Created Package")
	case change.Reason == rollout.RelabelReason:
		log.V(1).Info("Relabelled Package")
	default:
		log.Info("Updated Package", "previousRevision", change.PreviousRevision, "previousCommit", before.Spec.Revision)
	}
}

// removeShardLabel removes the convoy.dev/shard label of the Package u was applied as, at the
// version the apply answered: an apply that leaves the label out removes it only when no other
// field manager set it too (a hand edit, an older template), and the Package would then be
// relabelled at every pass.
func (r *HostedClusterPackageReconciler) removeShardLabel(ctx context.Context, u client.Object) error {
	patch := fmt.Appendf(nil, `{"metadata":{"resourceVersion":%q,"labels":{%q:null}}}`, u.GetResourceVersion(), convoyv1alpha1.ShardLabel)
	if err := r.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("removing the shard label of Package %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// shardOf returns the convoy.dev/shard label, under the sharding in force, of the Package a
// change applies: a new Package
// gets its shard; an update keeps the one it has, so that the replica applying the old revision
// is the one that applies the new; only a relabel, which keeps the revision, moves it.
func shardOf(sharding Sharding, change rollout.Change, pkg *convoyv1alpha1.Package) string {
	current := shardLabelOf(pkg)
	if pkg != nil && change.Reason != rollout.RelabelReason {
		return current
	}
	return sharding.shardFor(change.Package.Namespace, current)
}

// deletePackages deletes, and logs, the Packages of the plan's deletions that are not being
// deleted already. Their own finalizer tears down what they applied; it never waits for a HostedCluster
// that is going away.
func (r *HostedClusterPackageReconciler) deletePackages(ctx context.Context, s *scope) error {
	gone := map[types.NamespacedName]int64{}
	for _, d := range s.plan.Deletes {
		pkg := s.packages.byKey[d.Package]
		if pkg == nil || pkg.DeletionTimestamp != nil {
			continue
		}
		err := r.Client.Delete(ctx, pkg, client.Preconditions{UID: &pkg.UID})
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Package %s: %w", d.Package, err)
		}
		gone[d.Package] = deleted
		ctrl.LoggerFrom(ctx).Info("Deleted Package", "package", d.Package.String(), "cluster", d.HostedCluster,
			"commit", pkg.Spec.Revision, "reason", d.Reason)
	}
	r.expect.set(s.obj.Name, gone)
	return nil
}

// applyConcurrency returns the bound on parallel applies.
func (r *HostedClusterPackageReconciler) applyConcurrency() int {
	if r.ApplyConcurrency > 0 {
		return r.ApplyConcurrency
	}
	return DefaultApplyConcurrency
}
