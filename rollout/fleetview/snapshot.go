package fleetview

import (
	"context"
	"fmt"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// hostedClusterPackageKind is the kind that owns Packages and ControllerRevisions.
const hostedClusterPackageKind = "HostedClusterPackage"

// Snapshot is one HostedClusterPackage and the part of the management cluster its rollout reads.
type Snapshot struct {
	// HostedClusterPackage is the object as read.
	HostedClusterPackage *convoyv1alpha1.HostedClusterPackage

	// Revisions are the ControllerRevisions it owns that could be decoded, by name.
	Revisions map[string]rollout.Revision

	// HostedClusters are every HostedCluster of the management cluster.
	HostedClusters []rollout.HostedCluster

	// Packages are the Packages the HostedClusterPackage owns.
	Packages []convoyv1alpha1.Package

	// SourceCommit is the commit of the template's GitSource artifact; empty when unknown.
	SourceCommit string

	// Approvals are the PartitionApprovals of the GitSource's namespace and the legacy
	// RolloutApprovals that name the HostedClusterPackage.
	Approvals []rollout.Approval

	// Dependencies and Dependants are what the planner reads of the HostedClusterPackages it
	// depends on and of those that depend on it (rule 26 of package rollout).
	Dependencies []rollout.Dependency
	Dependants   map[string][]string

	// Order lists, level by level, the HostedClusterPackages this one reaches through its
	// dependencies, itself last: the order in which each HostedCluster gets them.
	Order [][]string
}

// ReadStatus reads the HostedClusterPackage name (every one when name is empty) and its revisions:
// what a status report needs.
func ReadStatus(ctx context.Context, c client.Reader, name string) ([]*Snapshot, error) {
	var items []convoyv1alpha1.HostedClusterPackage
	if name != "" {
		hcpkg := &convoyv1alpha1.HostedClusterPackage{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, hcpkg); err != nil {
			return nil, fmt.Errorf("reading HostedClusterPackage %s: %w", name, err)
		}
		items = append(items, *hcpkg)
	} else {
		list := &convoyv1alpha1.HostedClusterPackageList{}
		if err := c.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing HostedClusterPackages: %w", err)
		}
		items = list.Items
	}
	revisions, err := listRevisions(ctx, c, items, name == "")
	if err != nil {
		return nil, err
	}
	snaps := make([]*Snapshot, 0, len(items))
	for i := range items {
		hcpkg := &items[i]
		snaps = append(snaps, &Snapshot{HostedClusterPackage: hcpkg, Revisions: revisionsOf(revisions, hcpkg)})
	}
	return snaps, nil
}

// Read reads the HostedClusterPackage name with its revisions, every HostedCluster, the Packages
// it owns, the commit of its GitSource, its approvals and its dependencies: what a forecast
// needs.
func Read(ctx context.Context, c client.Reader, name string) (*Snapshot, error) {
	snaps, err := ReadStatus(ctx, c, name)
	if err != nil {
		return nil, err
	}
	snap := snaps[0]
	if snap.HostedClusters, err = listHostedClusters(ctx, c); err != nil {
		return nil, err
	}
	if snap.Packages, err = listPackages(ctx, c, snap.HostedClusterPackage); err != nil {
		return nil, err
	}
	if snap.SourceCommit, err = sourceCommit(ctx, c, snap.HostedClusterPackage); err != nil {
		return nil, err
	}
	if snap.Approvals, err = listApprovals(ctx, c, snap.HostedClusterPackage); err != nil {
		return nil, err
	}
	if err := snap.readDependencies(ctx, c); err != nil {
		return nil, err
	}
	return snap, nil
}

// listApprovals reads the approvals of hcpkg: the PartitionApprovals of its GitSource's
// namespace that name it, and the legacy RolloutApprovals when the cluster serves them and the
// caller may read them (an approver of one namespace may not); which count is
// rollout.Approval.Approves's answer.
func listApprovals(ctx context.Context, c client.Reader, hcpkg *convoyv1alpha1.HostedClusterPackage) ([]rollout.Approval, error) {
	var out []rollout.Approval
	if ns := hcpkg.Spec.Template.Spec.SourceRef.Namespace; ns != "" {
		list := &convoyv1alpha1.PartitionApprovalList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil && !apimeta.IsNoMatchError(err) {
			return nil, fmt.Errorf("listing PartitionApprovals: %w", err)
		}
		for i := range list.Items {
			if list.Items[i].Spec.HostedClusterPackage == hcpkg.Name {
				out = append(out, rollout.ApprovalOf(&list.Items[i]))
			}
		}
	}
	legacy := &convoyv1alpha1.RolloutApprovalList{}
	err := c.List(ctx, legacy)
	if apimeta.IsNoMatchError(err) || apierrors.IsForbidden(err) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing RolloutApprovals: %w", err)
	}
	for i := range legacy.Items {
		if legacy.Items[i].Spec.HostedClusterPackage == hcpkg.Name {
			out = append(out, rollout.LegacyApprovalOf(&legacy.Items[i]))
		}
	}
	return out, nil
}

// listRevisions lists the ControllerRevisions of the HostedClusterPackages items, in the
// namespaces of their GitSources, where the controller makes them: those labelled
// convoy.dev/hostedclusterpackage, not the revisions of every DaemonSet and StatefulSet, and
// never in a namespace no rollout names, so that an approver needs to read one namespace only.
// With lenient, a namespace the caller may not read is skipped (`convoy status` of the whole
// fleet by an approver of one team).
func listRevisions(ctx context.Context, c client.Reader, items []convoyv1alpha1.HostedClusterPackage, lenient bool) ([]appsv1.ControllerRevision, error) {
	seen := map[string]bool{}
	var out []appsv1.ControllerRevision
	for i := range items {
		ns := items[i].Spec.Template.Spec.SourceRef.Namespace
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		list := &appsv1.ControllerRevisionList{}
		err := c.List(ctx, list, client.InNamespace(ns), client.HasLabels{convoyv1alpha1.HostedClusterPackageLabel})
		if lenient && apierrors.IsForbidden(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing ControllerRevisions in %s: %w", ns, err)
		}
		out = append(out, list.Items...)
	}
	return out, nil
}

// revisionsOf decodes the revisions that hcpkg owns.
func revisionsOf(all []appsv1.ControllerRevision, hcpkg *convoyv1alpha1.HostedClusterPackage) map[string]rollout.Revision {
	revs := map[string]rollout.Revision{}
	for i := range all {
		cr := &all[i]
		if !ownedBy(cr, hcpkg) {
			continue
		}
		if rev, ok := DecodeRevision(cr); ok {
			revs[cr.Name] = rev
		}
	}
	return revs
}

// ownedBy reports whether obj has hcpkg as an owner, or carries its label.
func ownedBy(obj metav1.Object, hcpkg *convoyv1alpha1.HostedClusterPackage) bool {
	if obj.GetLabels()[convoyv1alpha1.HostedClusterPackageLabel] == hcpkg.Name {
		return true
	}
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == hostedClusterPackageKind && ref.Name == hcpkg.Name {
			return true
		}
	}
	return false
}

// listHostedClusters reads every HostedCluster as the planner sees it.
func listHostedClusters(ctx context.Context, c client.Reader) ([]rollout.HostedCluster, error) {
	list := &hyperv1.HostedClusterList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing HostedClusters: %w", err)
	}
	out := make([]rollout.HostedCluster, 0, len(list.Items))
	for i := range list.Items {
		hc := &list.Items[i]
		available := apimeta.FindStatusCondition(hc.Status.Conditions, string(hyperv1.HostedClusterAvailable))
		rhc := rollout.HostedCluster{
			Namespace: hc.Namespace,
			Name:      hc.Name,
			Labels:    hc.Labels,
			Deleting:  hc.DeletionTimestamp != nil,
			Available: available != nil && available.Status == metav1.ConditionTrue,
		}
		if !rhc.Available {
			rhc.AvailableMessage = "the Available condition is missing"
			if available != nil {
				rhc.AvailableMessage = available.Message
			}
		}
		out = append(out, rhc)
	}
	return out, nil
}

// listPackages reads the Packages hcpkg owns.
func listPackages(ctx context.Context, c client.Reader, hcpkg *convoyv1alpha1.HostedClusterPackage) ([]convoyv1alpha1.Package, error) {
	list := &convoyv1alpha1.PackageList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing Packages: %w", err)
	}
	var out []convoyv1alpha1.Package
	for i := range list.Items {
		if ownedBy(&list.Items[i], hcpkg) {
			out = append(out, list.Items[i])
		}
	}
	return out, nil
}

// sourceCommit returns the artifact commit of the template's GitSource; empty when the template
// names no namespace or the GitSource has no artifact yet.
func sourceCommit(ctx context.Context, c client.Reader, hcpkg *convoyv1alpha1.HostedClusterPackage) (string, error) {
	ref := hcpkg.Spec.Template.Spec.SourceRef
	if ref.Namespace == "" {
		return "", nil
	}
	gs := &convoyv1alpha1.GitSource{}
	err := c.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, gs)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading GitSource %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	if gs.Status.Artifact == nil {
		return "", nil
	}
	return gs.Status.Artifact.Commit, nil
}
