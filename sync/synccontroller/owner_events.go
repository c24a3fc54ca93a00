package synccontroller

import (
	"hash/maphash"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// ownerEventBuckets is how many counters ownerEvents spreads the owners over.
const ownerEventBuckets = 1 << 16

// ownerEvents counts the events of the watch of applied objects per owner, as their ownership
// labels name it before and after the event (engine.OwnerEvents). Owners are spread over a
// fixed number of buckets, 512 KiB whatever the fleet: owners that share a bucket move each
// other's count, which only costs a pass in full, never a missed change.
type ownerEvents struct {
	seed    maphash.Seed
	buckets [ownerEventBuckets]atomic.Uint64
}

// newOwnerEvents returns counts at zero.
func newOwnerEvents() *ownerEvents { return &ownerEvents{seed: maphash.MakeSeed()} }

// Count implements engine.OwnerEvents.
func (o *ownerEvents) Count(kind, namespace, name string) uint64 {
	return o.bucket(kind, namespace, name).Load()
}

// handler counts every event of an informer for the owners its object's labels name.
func (o *ownerEvents) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.add(obj) },
		UpdateFunc: func(old, updated any) { o.add(old); o.add(updated) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			o.add(obj)
		},
	}
}

// add counts one event for the owner obj's labels name, if any.
func (o *ownerEvents) add(obj any) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	l := m.GetLabels()
	name, namespace := l[convoyv1alpha1.PackageNameLabel], l[convoyv1alpha1.PackageNamespaceLabel]
	if name == "" || namespace == "" {
		return // no owner's object: nothing an owner's settled pass looked at
	}
	o.bucket(l[convoyv1alpha1.OwnerKindLabel], namespace, name).Add(1)
}

// bucket returns the counter of the owner of kind, namespace and name.
func (o *ownerEvents) bucket(kind, namespace, name string) *atomic.Uint64 {
	var h maphash.Hash
	h.SetSeed(o.seed)
	for _, s := range []string{kind, namespace, name} {
		_, _ = h.WriteString(s)
		_ = h.WriteByte(0)
	}
	return &o.buckets[h.Sum64()%ownerEventBuckets]
}
