package engine

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	// AdoptFrom names the tools whose objects the owner takes over (spec.adopt.from): an
	// existing object that only they hold is moved to the owner instead of refused.
	AdoptFrom []convoyv1alpha1.AdoptOwner
}
