package memory

import (
	"crypto/sha256"

	cliobject "github.com/fluxcd/cli-utils/pkg/object"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
)

// Owner is the owner of a pass's objects (a Package or an ObjectDeployment), as its ownership
// labels name it.
type Owner struct {
	// Kind is the owner's kind in the ownership labels: "" for a Package.
	Kind string
	// Namespace and Name of the owner.
	Namespace, Name string
	// Shard is the owner's convoy.dev/shard, which its management objects carry.
	Shard string
}

// id identifies the owner in the ledger and among settled passes.
func (o Owner) id() string { return ownerKey(o.Kind, o.Namespace, o.Name) }

// ownerKey identifies the owner of kind, namespace and name.
func ownerKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// Cluster is where a stage or a phase of a pass lands, and under which probes it is judged.
type Cluster struct {
	// Owner is the pass's owner.
	Owner Owner
	// Hosted is set for the hosted cluster of the owner's namespace, unset for the management
	// cluster.
	Hosted bool
	// Reader reads the hosted cluster: the memory lists the owner's objects there to find the
	// quiet ones. Unused for the management cluster, which the watch tells about.
	Reader client.Reader
	// Rules is the digest of the probe rules of the pass (probe.Digest, never zero); a zero
	// digest finds nothing quiet and records no verdict.
	Rules [sha256.Size]byte
	// Previous is the owner's previous inventory: an object it holds in this cluster exists,
	// or did, so it is never created without a read.
	Previous []convoyv1alpha1.InventoryEntry
}

// name names the cluster in ledger keys: hosted clusters are told apart by namespace.
func (c Cluster) name() string {
	if c.Hosted {
		return convoyv1alpha1.InventoryClusterHosted + "/" + c.Owner.Namespace
	}
	return convoyv1alpha1.InventoryClusterManagement
}

// Key identifies an object in one cluster.
type Key struct {
	GK              schema.GroupKind
	Namespace, Name string
}

// Desired is an object of a stage as the pass wants it.
type Desired struct {
	// GVK, Namespace and Name are where the object lands.
	GVK             schema.GroupVersionKind
	Namespace, Name string
	// Shard is the convoy.dev/shard label it carries: the watch of this replica holds it only
	// in the owner's shard.
	Shard string
	// Digest identifies the object as it will be applied; Known is false for an object that
	// does not encode, which the memory then never matches.
	Digest manifests.Digest
	Known  bool
}

// key is the object's key.
func (d *Desired) key() Key { return Key{GK: d.GVK.GroupKind(), Namespace: d.Namespace, Name: d.Name} }

// inventoryID is the object's ID in an inventory (InventoryEntry.ID).
func (d *Desired) inventoryID() string {
	return cliobject.ObjMetadata{Namespace: d.Namespace, Name: d.Name, GroupKind: d.GVK.GroupKind()}.String()
}

// Observed is a state of an object as the API server answered it; zero when none was seen.
type Observed struct {
	ResourceVersion string
	UID             types.UID
}

// Advice is what the memory tells a stage of one object. The zero Advice skips nothing: the
// object is read, and written if it differs.
type Advice struct {
	// Quiet is set when the object is neither read nor written: this owner applied it as
	// desired now, judged it available under the same probes, and nothing changed it since.
	Quiet bool
	// UID, when set, is the UID the object had when this owner applied it in another state:
	// it is applied directly, without a read, with that UID as a precondition.
	UID types.UID
	// Fresh is set when nothing says the object exists (neither the previous inventory nor the
	// synced watch of the management cluster holds it): it is created without a read.
	Fresh bool
	// Recorded is the state at which this owner last applied or read the object as desired
	// now; an object read at it is untouched and need not be written. Zero when there is none.
	Recorded Observed
}

// Write is what a stage did to one object, as the memory is told it.
type Write struct {
	// Desired is the object as the stage wanted it.
	Desired Desired
	// Live is the object's state as the API server last answered it (an apply's answer, or
	// a read); zero when the stage ended before it was written or read.
	Live Observed
	// Forget is set when what the memory knows of the object no longer holds: a direct apply
	// refused, an object created and deleted again, an object about to be deleted.
	Forget bool
}

// Verdict is one object of a phase judged available.
type Verdict struct {
	// GVK, Namespace and Name name the object.
	GVK             schema.GroupVersionKind
	Namespace, Name string
	// Quiet is set when the object was not read: its verdict is the one the memory holds.
	Quiet bool
	// Live is the state it was judged at; zero when it was not seen.
	Live Observed
	// Owned is set when the live object carries the owner's labels.
	Owned bool
}

// Pass is what the memory is asked before a pass: whose, which revision, after which inventory.
type Pass struct {
	Owner Owner
	// Revision identifies the revision (Revision.ID); Rules is the digest of its probes.
	Revision string
	Rules    [sha256.Size]byte
	// Phases are the revision's phases, in order.
	Phases []Phase
	// Previous is the owner's previous inventory.
	Previous []convoyv1alpha1.InventoryEntry
}

// Phase is a phase of a Pass: its name, class and the digests of its objects.
type Phase struct {
	Name, Class string
	// Digests holds the digest of each object; Complete is unset when some object has none
	// (the render did not digest it): such a revision is never repeated.
	Digests  []manifests.Digest
	Complete bool
}

// Settled is the outcome of the owner's last settled pass, which a pass repeats.
type Settled struct {
	// Phases are its phases' statuses, a copy.
	Phases []convoyv1alpha1.PhaseStatus
	// Objects counts the revision's objects.
	Objects int
}

// Outcome is what a pass did, as the memory is told it at the end.
type Outcome struct {
	// Clean is set when the pass ended without error, every phase available, every object of
	// a kind the watch of the management cluster has synced, nothing pruned and nothing of the
	// previous inventory left behind.
	Clean bool
	// Objects counts the revision's objects.
	Objects int
	// Phases and Inventory are the pass's result.
	Phases    []convoyv1alpha1.PhaseStatus
	Inventory []convoyv1alpha1.InventoryEntry
	// AppliedDirectly is set when the pass applied management objects without reading them.
	AppliedDirectly bool
	// Judged holds what the pass judged of each phase it found available, in order.
	Judged []JudgedPhase
}

// JudgedPhase is what a pass judged of a phase it found available: the cluster the phase was
// applied to and the verdict on each of its objects, quiet ones included.
type JudgedPhase struct {
	Cluster  Cluster
	Verdicts []Verdict
}

// ResourceVersions is a watch of the objects the engine applied to the management cluster.
type ResourceVersions interface {
	// ResourceVersion tells, without a request, the resourceVersion the watch last saw of an
	// object. ok is false when it cannot tell: the kind is not watched, its watch has not
	// synced, or the object is not in it.
	ResourceVersion(gvk schema.GroupVersionKind, namespace, name string) (rv string, ok bool)
	// Synced reports whether the objects of kind gvk are watched and the watch has synced: from
	// then on every change of one of them is an event.
	Synced(gvk schema.GroupVersionKind) bool
}
