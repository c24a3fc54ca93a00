package engine

import (
	"crypto/sha256"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/manifests/probe"
)

// FieldManager is the server-side apply field manager of every object convoy applies. It must
// never change: fields recorded under it would be orphaned.
const FieldManager = "convoy"

// Revision is one rendered revision: ordered phases of objects and the probes that judge them.
// The engine never modifies it, so a Revision may be shared (e.g. from a render cache).
type Revision struct {
	// ID identifies the revision (a commit, or a hash of an ObjectDeployment template).
	ID string
	// Phases are applied in order.
	Phases []Phase
	// Probes judge the objects they select; kstatus judges the others.
	Probes []probe.Rule
	// ProbesDigest, when set, is probe.Digest(Probes), computed once per render
	// (manifests.Rendered has it): a pass then does not encode the probes.
	ProbesDigest manifests.Digest
}

// probesDigest returns the digest of the revision's probes.
func (r *Revision) probesDigest() [sha256.Size]byte {
	if r.ProbesDigest != (manifests.Digest{}) {
		return r.ProbesDigest
	}
	return rulesDigest(r.Probes)
}

// Phase is a named group of objects that land in one cluster.
type Phase struct {
	// Name of the phase.
	Name string
	// Class is convoyv1alpha1.ClassManagement or convoyv1alpha1.ClassHostedCluster.
	Class string
	// Objects of the phase. The engine copies them before changing anything.
	Objects []*unstructured.Unstructured
	// Digests, when set, holds manifests.ObjectDigest of each object, in the order of Objects
	// (manifests.Phase has them): the engine then does not encode the objects on every pass.
	// Objects must not change while Digests describe them.
	Digests []manifests.Digest
}

// sourceDigest returns the digest of object i of the phase.
func (ph *Phase) sourceDigest(i int) (manifests.Digest, bool) {
	if len(ph.Digests) == len(ph.Objects) {
		return ph.Digests[i], true
	}
	return manifests.ObjectDigest(ph.Objects[i])
}

// NeedsHostedCluster reports whether a phase with objects lands in the hosted cluster.
func (r *Revision) NeedsHostedCluster() bool {
	for _, ph := range r.Phases {
		if ph.Class == convoyv1alpha1.ClassHostedCluster && len(ph.Objects) > 0 {
			return true
		}
	}
	return false
}

// Target is where a revision lands and who owns it.
type Target struct {
	// Namespace and Name of the owner (a Package or an ObjectDeployment). Management phases
	// land in Namespace, and both go into the ownership labels.
	Namespace, Name string
	// Kind is the owner's kind in OwnerKindLabel: "" for a Package, "ObjectDeployment" for an
	// ObjectDeployment.
	Kind string
	// Management is a client of the management cluster.
	Management client.Client
	// Hosted is a client of the hosted cluster of Namespace; nil when there is none.
	Hosted client.Client
	// HostedUnavailable explains why Hosted is nil; it is the message of the error a revision
	// with hosted-cluster phases gets.
	HostedUnavailable error
	// Shard, when set, is the owner's convoy.dev/shard: its management objects carry it too, so
	// that the watch of each shard's replica holds only its own shard's objects.
	Shard string
}

// cluster returns the cluster of a phase class.
func (t *Target) cluster(class string) *cluster {
	if class == convoyv1alpha1.ClassHostedCluster {
		return &cluster{name: convoyv1alpha1.InventoryClusterHosted, client: t.Hosted, target: t, owner: ownerID(t)}
	}
	return &cluster{name: convoyv1alpha1.InventoryClusterManagement, client: t.Management, target: t, owner: ownerID(t)}
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
	// owner is ownerID(target), made once by Target.cluster: the ledger keeps it in each of the
	// owner's entries. Read it with ownerID.
	owner string
}

// ownerID returns ownerID(c.target), never "": a cluster built without Target.cluster still
// tells its owner's ledger entries from another's.
func (c *cluster) ownerID() string {
	if c.owner == "" {
		return ownerID(c.target)
	}
	return c.owner
}

func (c *cluster) hosted() bool { return c.name == convoyv1alpha1.InventoryClusterHosted }

// owns reports whether obj carries this target's ownership labels.
func (c *cluster) owns(obj client.Object) bool {
	l := obj.GetLabels()
	return l[convoyv1alpha1.PackageNameLabel] == c.target.Name &&
		l[convoyv1alpha1.PackageNamespaceLabel] == c.target.Namespace &&
		l[convoyv1alpha1.OwnerKindLabel] == c.target.Kind
}

// ownerID identifies the owner of a target.
func ownerID(t *Target) string { return ownerKey(t.Kind, t.Namespace, t.Name) }

// ownerKey identifies the owner of kind (a Target.Kind), namespace and name.
func ownerKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// rulesDigest identifies the probe rules an object is judged under.
func rulesDigest(rules []probe.Rule) [sha256.Size]byte { return probe.Digest(rules) }

// objectKey identifies an object in one cluster.
type objectKey struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

func keyOf(obj *unstructured.Unstructured) objectKey {
	return objectKey{gk: obj.GroupVersionKind().GroupKind(), namespace: obj.GetNamespace(), name: obj.GetName()}
}
