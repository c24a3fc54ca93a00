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

// metadataDigestAnnotation is the one annotation the cache keeps of an applied object: a digest
// of its annotations and other labels.
const metadataDigestAnnotation = "convoy.dev/cached-metadata-digest"

// digestSeed seeds the digests of this process; nothing outlives it.
var digestSeed = maphash.MakeSeed()

// trimAppliedMetadata is the transform of the cache of applied objects. It keeps what the
// watches read (name, namespace, UID, resourceVersion, generation, deletion and the ownership
// labels) and replaces the other labels and every annotation by a digest of them, so that a
// change to them still tells an update from a status-only one (statusOnlyUpdate). An object's
// cost in memory no longer grows with what its author or others put on it: a 200 KiB
// kubectl.kubernetes.io/last-applied-configuration of an object adopted from client-side
// apply costs 16 bytes. Managed fields, owner references and finalizers, which nothing here
// reads, go too. Prune and adoption annotations are read from the live object, never from this
// cache. Trimming a trimmed object changes nothing.
func trimAppliedMetadata(in any) (any, error) {
	obj, err := apimeta.Accessor(in)
	if err != nil {
		return in, nil // not an object: nothing to trim
	}
	labels, annotations := obj.GetLabels(), obj.GetAnnotations()
	if !trimmedAlready(labels, annotations) {
		obj.SetAnnotations(digestOf(labels, annotations))
	}
	obj.SetLabels(ownershipOf(labels))
	obj.SetManagedFields(nil)
	obj.SetOwnerReferences(nil)
	obj.SetFinalizers(nil)
	return in, nil
}

// trimmedAlready reports labels and annotations as trimAppliedMetadata leaves them: only
// ownership labels, and no annotation but the digest. Their digest would be a digest of the
// digest, so they keep it.
func trimmedAlready(labels, annotations map[string]string) bool {
	for k := range labels {
		if !slices.Contains(ownershipLabels, k) {
			return false
		}
	}
	_, digest := annotations[metadataDigestAnnotation]
	return len(annotations) == 0 || (len(annotations) == 1 && digest)
}

// ownershipOf returns the ownership labels of labels, keyed by the constant strings; nil when
// there are none.
func ownershipOf(labels map[string]string) map[string]string {
	var kept map[string]string
	for _, key := range ownershipLabels {
		if v, ok := labels[key]; ok {
			if kept == nil {
				kept = make(map[string]string, len(ownershipLabels))
			}
			kept[key] = v
		}
	}
	return kept
}

// digestOf returns the annotations the cache keeps for labels and annotations: one digest of
// the labels that are not ownership labels and of the annotations, or none when there are
// none. Each string is hashed after its length, so no two different sets give the same input.
func digestOf(labels, annotations map[string]string) map[string]string {
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
		return nil
	}
	return map[string]string{metadataDigestAnnotation: strconv.FormatUint(h.Sum64(), 16)}
}
