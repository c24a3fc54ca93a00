package synccontroller

import (
	"context"
	"testing"
	"time"

	cliobject "github.com/fluxcd/cli-utils/pkg/object"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// recordingQueue records the adds of an event handler.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	now, later []reconcile.Request
}

func (q *recordingQueue) Add(r reconcile.Request) { q.now = append(q.now, r) }
func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	if d <= 0 {
		q.Add(r)
		return
	}
	q.later = append(q.later, r)
}

// appliedObject returns the metadata of an object applied by Package ns/owner.
func appliedObject(ns, owner string, generation int64, annotations map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent", Generation: generation,
		Annotations: annotations, Labels: map[string]string{
			convoyv1alpha1.PackageNameLabel: owner, convoyv1alpha1.PackageNamespaceLabel: ns}}}
}

// Status-only updates of a settled owner's objects are spaced by statusChurnDelay; every other
// update, and any update while the owner is not settled, enqueues the owner at once.
func TestStatusChurnOfASettledOwnerIsSpaced(t *testing.T) {
	settled := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "settled"}}
	pass.MarkTrue(settled, convoyv1alpha1.ReadyCondition, convoyv1alpha1.SucceededReason, "ok")
	pass.MarkTrue(settled, convoyv1alpha1.AvailableCondition, convoyv1alpha1.RevisionAvailableReason, "ok")
	busy := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "busy"}}
	c := &Common{Client: fake.NewClientBuilder().WithScheme(env.Scheme).WithObjects(settled, busy).Build()}
	h := c.enqueueOwner(&convoyv1alpha1.Package{})
	update := func(owner string, oldGen, newGen int64, annotations map[string]string) *recordingQueue {
		q := &recordingQueue{}
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: appliedObject("ns", owner, oldGen, nil),
			ObjectNew: appliedObject("ns", owner, newGen, annotations)}, q)
		return q
	}
	g := NewWithT(t)
	q := update("settled", 1, 1, nil)
	g.Expect(q.later).To(HaveLen(1), "status only, settled owner: spaced")
	g.Expect(q.now).To(BeEmpty())
	g.Expect(update("settled", 1, 2, nil).now).To(HaveLen(1), "spec changed")
	g.Expect(update("settled", 1, 1, map[string]string{"a": "b"}).now).To(HaveLen(1), "annotations changed")
	g.Expect(update("settled", 0, 0, nil).now).To(HaveLen(1), "a kind without generation")
	g.Expect(update("busy", 1, 1, nil).now).To(HaveLen(1), "status only, owner not settled")
}

func TestResourceVersionReadsTheInformersStore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	a := startedWatches(t, g, cache.Options{Scheme: env.Scheme})
	ns := fleet.NewNamespaceIn(t, env.Client)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent", Labels: map[string]string{
		convoyv1alpha1.PackageNameLabel: "app", convoyv1alpha1.PackageNamespaceLabel: ns}}, Data: map[string]string{"v": "1"}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	id := cliobject.ObjMetadata{Namespace: ns, Name: "agent", GroupKind: schema.GroupKind{Kind: "ConfigMap"}}.String()
	a.ensure(ctx, []convoyv1alpha1.InventoryEntry{{ID: id, Version: "v1", Cluster: convoyv1alpha1.InventoryClusterManagement}})
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")

	resourceVersion := func(name string) func() string {
		return func() string { rv, _ := a.ResourceVersion(gvk, ns, name); return rv }
	}
	g.Eventually(resourceVersion("agent")).Should(Equal(cm.ResourceVersion))
	g.Expect(a.synced[gvk]).NotTo(BeNil(), "read from the informer's store")
	counted := a.events.Count("", ns, "app")
	g.Expect(counted).NotTo(BeZero(), "the object's addition counted for its owner before the kind is synced")
	cm.Data["v"] = "2"
	g.Expect(env.Client.Update(ctx, cm)).To(Succeed())
	g.Eventually(resourceVersion("agent")).Should(Equal(cm.ResourceVersion))
	g.Eventually(func() uint64 { return a.events.Count("", ns, "app") }).Should(BeNumerically(">", counted), "the update counted")
	_, found := a.ResourceVersion(gvk, ns, "missing")
	g.Expect(found).To(BeFalse())
	_, found = a.ResourceVersion(corev1.SchemeGroupVersion.WithKind("Secret"), ns, "agent")
	g.Expect(found).To(BeFalse(), "a kind not watched")
}
