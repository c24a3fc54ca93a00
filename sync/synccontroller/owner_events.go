package synccontroller

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// ownerEventBuckets is how many counters ownerEvents spreads the owners over.
const ownerEventBuckets = 1 << 16

// ownerEvents counts the events of the watch of applied objects per owner, as their ownership
// labels name it before and after the event (engine.OwnerEvents). Owners are spread over a
// fixed number of buckets, 512 KiB whatever the fleet: owners that share a bucket move each
// other's count, which only costs a pass in full (and, for a pass that applied objects, the
// pass 2 s later a stale one makes: engine.Result.Stale), never a missed change. An event of a state an
// engine holds for the owner (engine.Engine.HoldsState: its own write, or a state its pass read)
// is not counted, nor is a resync that changes nothing: the owner's pass saw that state.
type ownerEvents struct {
	seed    maphash.Seed
	buckets [ownerEventBuckets]atomic.Uint64

	mu      sync.RWMutex
	holders []stateHolder
}

// stateHolder tells the events of the states an engine's passes saw (engine.Engine).
type stateHolder interface {
	HoldsState(obj client.Object, count func()) bool
}

// newOwnerEvents returns counts at zero.
func newOwnerEvents() *ownerEvents { return &ownerEvents{seed: maphash.MakeSeed()} }

// skipStatesOf stops counting the events of the states e holds for their owners.
func (o *ownerEvents) skipStatesOf(e stateHolder) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.holders = append(o.holders, e)
}

// Count implements engine.OwnerEvents.
func (o *ownerEvents) Count(kind, namespace, name string) uint64 {
	return o.bucket(kind, namespace, name).Load()
}

// handler counts the events of an informer for the owners their objects' labels name.
func (o *ownerEvents) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			count := func() { o.add(obj) }
			if !o.held(obj, count) {
				count()
			}
		},
		UpdateFunc: func(old, updated any) {
			count := func() { o.add(old); o.add(updated) }
			if !o.tellsOwnerNothing(old, updated, count) {
				count()
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			o.add(obj)
		},
	}
}

// tellsOwnerNothing reports an update that tells its owner nothing new: a resync of the same
// resourceVersion, or a state an engine holds for the owner, who owned the object before too.
// An engine may call count later instead (held).
func (o *ownerEvents) tellsOwnerNothing(old, updated any, count func()) bool {
	before, ok := old.(client.Object)
	after, ok2 := updated.(client.Object)
	if !ok || !ok2 {
		return false
	}
	if rv := after.GetResourceVersion(); rv != "" && rv == before.GetResourceVersion() {
		return true
	}
	return ownerOfLabels(before.GetLabels()) == ownerOfLabels(after.GetLabels()) && o.held(after, count)
}

// held reports whether an engine holds obj's state for the owner its labels name, or will tell
// once its apply of obj ends, calling count if it turns out not to.
func (o *ownerEvents) held(obj any, count func()) bool {
	co, ok := obj.(client.Object)
	if !ok {
		return false
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	for _, h := range o.holders {
		if h.HoldsState(co, count) {
			return true
		}
	}
	return false
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

// ownerOfLabels names the owner ownership labels name: its kind, namespace and name.
func ownerOfLabels(l map[string]string) [3]string {
	return [3]string{l[convoyv1alpha1.OwnerKindLabel], l[convoyv1alpha1.PackageNamespaceLabel], l[convoyv1alpha1.PackageNameLabel]}
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
