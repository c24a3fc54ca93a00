package synccontroller

import (
	"encoding/binary"
	"hash/maphash"
	"maps"
	"slices"
	"strconv"
	"unique"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// ConfigureCompactCache makes the manager's cache keep each Package and ObjectDeployment in
// less memory, without changing a field: the strings that repeat across them (the revision a
// whole add-on is at, the conditions' messages, the inventory's versions and phases) are shared,
// and the inventory, which the decoder grew by doubling, is cut to its length. A fleet's cache
// holds 10,000 Packages; a Package's status of 4 conditions and an inventory of 10 then takes a
// quarter less. Call it on the cache options before creating the manager.
func ConfigureCompactCache(o *cache.Options) {
	next := o.DefaultTransform
	o.DefaultTransform = func(obj any) (any, error) {
		compactCached(obj)
		if next == nil {
			return obj, nil
		}
		return next(obj)
	}
}

// compactCached compacts a Package or an ObjectDeployment in place; it leaves other objects
// alone.
func compactCached(obj any) {
	switch o := obj.(type) {
	case *convoyv1alpha1.Package:
		compactMeta(&o.ObjectMeta)
		for _, s := range []*string{&o.Spec.Revision, &o.Spec.Path, &o.Spec.SourceRef.Name, &o.Spec.SourceRef.Namespace} {
			*s = intern(*s)
		}
		compactSyncStatus(&o.Status)
	case *convoyv1alpha1.ObjectDeployment:
		compactMeta(&o.ObjectMeta)
		compactSyncStatus(&o.Status)
	}
}

// compactMeta shares the namespace, the finalizers and the owners' names.
func compactMeta(m *metav1.ObjectMeta) {
	m.Namespace = intern(m.Namespace)
	for i := range m.Finalizers {
		m.Finalizers[i] = intern(m.Finalizers[i])
	}
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name = intern(r.APIVersion), intern(r.Kind), intern(r.Name)
		r.UID = types.UID(intern(string(r.UID)))
	}
}

// compactSyncStatus shares the strings of s that repeat across owners and cuts its inventory to
// its length.
func compactSyncStatus(s *convoyv1alpha1.SyncStatus) {
	s.Revision, s.LastAttemptedRevision = intern(s.Revision), intern(s.LastAttemptedRevision)
	for i := range s.Conditions {
		c := &s.Conditions[i]
		c.Type, c.Reason, c.Message = intern(c.Type), intern(c.Reason), intern(c.Message)
		c.Status = metav1.ConditionStatus(intern(string(c.Status)))
	}
	for i := range s.Phases {
		p := &s.Phases[i]
		p.Name, p.Class, p.Message = intern(p.Name), intern(p.Class), intern(p.Message)
	}
	if cap(s.Inventory) > len(s.Inventory) {
		s.Inventory = slices.Clone(s.Inventory)
	}
	for i := range s.Inventory {
		e := &s.Inventory[i]
		e.Version, e.Cluster, e.Phase = intern(e.Version), intern(e.Cluster), intern(e.Phase)
	}
}

// intern returns s, sharing its bytes with equal strings interned before. unique keeps a string
// only while a handle to it lives, and intern keeps none, so the strings interned between two
// garbage collections share one copy and a later one may get another: the sharing is partial,
// and never wrong.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// ownershipLabels are the labels of an applied object that the watches read: whose object it
// is (requestsForOwner, ownerEvents, the engine's ledger). The cache keeps them as they are,
// under these very strings.
var ownershipLabels = []string{
	convoyv1alpha1.PackageNameLabel, convoyv1alpha1.PackageNamespaceLabel, convoyv1alpha1.OwnerKindLabel,
}

// metadataDigestLabel is the one label the cache keeps of an applied object besides the
// ownership labels: a digest of its annotations and other labels. It is a label, not an
// annotation, so that a cached object holds one map instead of two: a map costs about 340
// bytes whatever it holds, 30 MiB over the 90,000 objects of a fleet. Its prefix is not a
// valid label prefix (uppercase), so no object from the API server carries it: an object that
// does was trimmed already.
const metadataDigestLabel = "Convoy.dev/cached-metadata-digest"

// digestSeed seeds the digests of this process; nothing outlives it.
var digestSeed = maphash.MakeSeed()

// trimAppliedMetadata is the transform of the cache of applied objects. It keeps what the
// watches read (name, namespace, UID, resourceVersion, generation, deletion and the ownership
// labels) and replaces the other labels and every annotation by a digest of them, kept as one
// more label, so that a change to them still tells an update from a status-only one
// (statusOnlyUpdate). An object's cost in memory no longer grows with what its author or others
// put on it: a 200 KiB kubectl.kubernetes.io/last-applied-configuration of an object adopted
// from client-side apply costs 16 bytes. The namespace is interned. Managed fields, owner
// references and finalizers, which nothing here reads, go too. Prune and adoption annotations
// are read from the live object, never from this cache. Trimming a trimmed object changes
// nothing.
func trimAppliedMetadata(in any) (any, error) {
	obj, err := apimeta.Accessor(in)
	if err != nil {
		return in, nil // not an object: nothing to trim
	}
	labels, annotations := obj.GetLabels(), obj.GetAnnotations()
	digest := labels[metadataDigestLabel]
	if !trimmedAlready(labels, annotations) {
		digest = digestOf(labels, annotations)
	}
	obj.SetNamespace(intern(obj.GetNamespace()))
	obj.SetLabels(keptLabels(obj.GetNamespace(), labels, digest))
	obj.SetAnnotations(nil)
	obj.SetManagedFields(nil)
	obj.SetOwnerReferences(nil)
	obj.SetFinalizers(nil)
	return in, nil
}

// trimmedAlready reports labels and annotations as trimAppliedMetadata leaves them: no
// annotation, and no label but the ownership labels and the digest. Their digest would be a
// digest of the digest, so they keep it.
func trimmedAlready(labels, annotations map[string]string) bool {
	for k := range labels {
		if k != metadataDigestLabel && !slices.Contains(ownershipLabels, k) {
			return false
		}
	}
	return len(annotations) == 0
}

// keptLabels returns the labels the cache keeps of an object in namespace: its ownership labels,
// keyed by the constant strings, and the digest of the rest unless it is ""; nil when there is
// nothing to keep. A package namespace label naming the object's own namespace, as it does for
// every management object of a Package, shares that string; the other values are interned, as
// the ten objects of a Package name the same one.
func keptLabels(namespace string, labels map[string]string, digest string) map[string]string {
	var kept map[string]string
	keep := func(key, value string) {
		if kept == nil {
			kept = make(map[string]string, len(ownershipLabels)+1)
		}
		kept[key] = value
	}
	for _, key := range ownershipLabels {
		if v, ok := labels[key]; ok {
			if v == namespace {
				v = namespace // equal, and now the very same string as the object's namespace
			} else {
				v = intern(v)
			}
			keep(key, v)
		}
	}
	if digest != "" {
		keep(metadataDigestLabel, digest)
	}
	return kept
}

// digestOf returns a digest of the labels that are not ownership labels and of the
// annotations, or "" when there are none. Each string is hashed after its length, so no two
// different sets give the same input.
func digestOf(labels, annotations map[string]string) string {
	var h maphash.Hash
	h.SetSeed(digestSeed)
	n := 0
	var length [binary.MaxVarintLen64]byte
	write := func(s string) {
		h.Write(binary.AppendUvarint(length[:0], uint64(len(s))))
		h.WriteString(s)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if !slices.Contains(ownershipLabels, k) {
			n++
			write("label")
			write(k)
			write(labels[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		n++
		write("annotation")
		write(k)
		write(annotations[k])
	}
	if n == 0 {
		return ""
	}
	return strconv.FormatUint(h.Sum64(), 16)
}
