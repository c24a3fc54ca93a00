package synccontroller

import (
	"encoding/binary"
	"hash/maphash"
	"maps"
	"slices"
	"strconv"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

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
