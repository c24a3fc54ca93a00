package synccontroller

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// ownershipLabels are the labels of an applied object that the watches read: whose object it
// is (requestsForOwner, the engine's ledger) and on which shard. The cache keeps them as they
// are, under these very strings.
var ownershipLabels = []string{
	convoyv1alpha1.PackageNameLabel, convoyv1alpha1.PackageNamespaceLabel, convoyv1alpha1.OwnerKindLabel,
	convoyv1alpha1.HostedClusterLabel, convoyv1alpha1.ShardLabel,
}

// metadataDigestAnnotation is the one annotation the cache keeps of an applied object: a digest
// of its annotations and other labels.
const metadataDigestAnnotation = "convoy.dev/cached-metadata-digest"

// trimAppliedMetadata is the transform of the cache of applied objects. It keeps what the
// watches read (name, namespace, UID, resourceVersion, generation, deletion and the ownership
// labels) and replaces the other labels and every annotation by a digest of them, so that a
// change to them still tells an update from a status-only one (statusOnlyUpdate). An object's
// cost in memory no longer grows with what its author or others put on it: a 200 KiB
// kubectl.kubernetes.io/last-applied-configuration of an object adopted from client-side
// apply costs 32 bytes. Managed fields, owner references and finalizers, which nothing here
// reads, go too. Prune and adoption annotations are read from the live object, never from this
// cache.
func trimAppliedMetadata(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil // a tombstone: the informer unwraps what it holds
	}
	labels, annotations := obj.GetLabels(), obj.GetAnnotations()
	kept := map[string]string{}
	for _, key := range ownershipLabels {
		if v, ok := labels[key]; ok {
			kept[key] = v
		}
	}
	if len(kept) == 0 {
		kept = nil
	}
	obj.SetLabels(kept)
	obj.SetAnnotations(digestOf(labels, annotations))
	obj.SetManagedFields(nil)
	obj.SetOwnerReferences(nil)
	obj.SetFinalizers(nil)
	return in, nil
}

// digestOf returns the annotations the cache keeps for labels and annotations: one digest of
// the labels that are not ownership labels and of the annotations, or none when there are
// none.
func digestOf(labels, annotations map[string]string) map[string]string {
	h := sha256.New()
	n := 0
	write := func(kind string, m map[string]string, skip func(string) bool) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if skip(k) {
				continue
			}
			n++
			for _, s := range []string{kind, k, m[k]} {
				h.Write([]byte(s))
				h.Write([]byte{0})
			}
		}
	}
	write("label", labels, func(k string) bool { return slices.Contains(ownershipLabels, k) })
	write("annotation", annotations, func(string) bool { return false })
	if n == 0 {
		return nil
	}
	return map[string]string{metadataDigestAnnotation: hex.EncodeToString(h.Sum(nil)[:16])}
}
