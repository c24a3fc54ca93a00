package rollout

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Approves reports whether a lets partition of hcpkg start at rev. It counts only when it names
// all of: hcpkg by its UID (a rollout deleted and made again under the same name is another
// rollout), the partition, the revision by name and by commit (a name is a hash that a pusher
// could try to grind; the commit is not), and when it sits in the namespace of hcpkg's GitSource,
// where RBAC grants approving (a legacy, cluster-scoped RolloutApproval has none). It never
// counts for a rejected revision, nor when it is older than the revision's ControllerRevision:
// it was then given for one of the same name that was pruned, and a revision that comes back
// needs approvals of its own. Both timestamps come from the API server.
func (a *Approval) Approves(hcpkg *convoyv1alpha1.HostedClusterPackage, partition string, rev *Revision) bool {
	return a.HostedClusterPackageUID != "" && a.HostedClusterPackageUID == hcpkg.UID &&
		(a.Namespace == "" || a.Namespace == hcpkg.Spec.Template.Spec.SourceRef.Namespace) &&
		a.Partition == partition && a.Revision == rev.Name && rev.Commit != "" && a.Commit == rev.Commit &&
		!rev.Rejected && !a.CreatedAt.Before(rev.CreatedAt)
}

// ApprovalOf returns what the planner reads of a PartitionApproval.
func ApprovalOf(a *convoyv1alpha1.PartitionApproval) Approval {
	return Approval{Name: a.Name, Namespace: a.Namespace, HostedClusterPackageUID: types.UID(a.Spec.HostedClusterPackageUID),
		Partition: a.Spec.Partition, Revision: a.Spec.Revision, Commit: a.Spec.Commit, CreatedAt: a.CreationTimestamp.Time}
}

// LegacyApprovalOf returns what the planner reads of a legacy RolloutApproval: the UID it binds
// is that of its owner reference to the HostedClusterPackage it names, as `convoy approve` of
// the releases before set it; one without such an owner binds none and never counts.
func LegacyApprovalOf(a *convoyv1alpha1.RolloutApproval) Approval {
	return Approval{Name: a.Name, HostedClusterPackageUID: OwnerUID(a.OwnerReferences, a.Spec.HostedClusterPackage),
		Partition: a.Spec.Partition, Revision: a.Spec.Revision, Commit: a.Spec.Commit, CreatedAt: a.CreationTimestamp.Time}
}

// OwnerUID returns the UID of the owner reference to the HostedClusterPackage named name in refs;
// empty when there is none.
func OwnerUID(refs []metav1.OwnerReference, name string) types.UID {
	for _, ref := range refs {
		if ref.Kind == "HostedClusterPackage" && ref.Name == name && ref.APIVersion == convoyv1alpha1.GroupVersion.String() {
			return ref.UID
		}
	}
	return ""
}
