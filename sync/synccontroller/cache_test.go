package synccontroller

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unique"
	"unsafe"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// settledPackageJSON is a Package as the API server sends it once settled: 4 conditions, 2
// phases and an inventory of 10.
func settledPackageJSON(t *testing.T, name string) []byte {
	t.Helper()
	commit := "80b921e9cbd6760a5a5b62b30b608a05d9194359"
	condition := func(typ, status, reason, message string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": message,
			"lastTransitionTime": "2026-11-26T11:45:18Z", "observedGeneration": 1}
	}
	inventory := []any{}
	for i := range 10 {
		inventory = append(inventory, map[string]any{"id": fmt.Sprintf("clusters-hc-0000_addon-config-%d__ConfigMap", i),
			"v": "v1", "cluster": "management", "phase": "deploy"})
	}
	raw, err := json.Marshal(map[string]any{
		"apiVersion": "convoy.dev/v1alpha1", "kind": "Package",
		"metadata": map[string]any{"name": name, "namespace": "clusters-hc-0000", "finalizers": []any{"convoy.dev/finalizer"},
			"ownerReferences": []any{map[string]any{"apiVersion": "convoy.dev/v1alpha1", "kind": "HostedClusterPackage",
				"name": "addon", "uid": "f8c7c950-d8c3-4db1-84e4-6160ab92dcc8"}}},
		"spec": map[string]any{"sourceRef": map[string]any{"name": "fleet"}, "path": "packages/addon", "revision": commit},
		"status": map[string]any{"observedGeneration": 1, "revision": commit, "lastAttemptedRevision": commit,
			"conditions": []any{
				condition("Paused", "False", "NotPaused", "Reconciliation is not paused"),
				condition("Ready", "True", "RevisionAvailable", "Revision "+commit+" is available"),
			},
			"phases":    []any{map[string]any{"name": "rbac", "objects": 3, "available": true}},
			"inventory": inventory},
	})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The compacted Package is equal to the one decoded, holds its inventory at its length, and
// shares the strings that repeat across Packages.
func TestCompactCachedPackageChangesNoField(t *testing.T) {
	g := NewWithT(t)
	decode := func(name string) *convoyv1alpha1.Package {
		p := &convoyv1alpha1.Package{}
		g.Expect(json.Unmarshal(settledPackageJSON(t, name), p)).To(Succeed())
		return p
	}
	opts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	ConfigureCompactCache(&opts)
	transform := func(p *convoyv1alpha1.Package) *convoyv1alpha1.Package {
		out, err := opts.DefaultTransform(p)
		g.Expect(err).NotTo(HaveOccurred())
		return out.(*convoyv1alpha1.Package)
	}
	// Handles held for the test, so that no garbage collection drops the interned copies.
	held := []any{unique.Make("80b921e9cbd6760a5a5b62b30b608a05d9194359"), unique.Make("management"),
		unique.Make("Reconciliation is not paused"), unique.Make("clusters-hc-0000")}

	a, b := transform(decode("a")), transform(decode("b"))
	g.Expect(a).To(Equal(decode("a")), "no field changed")
	g.Expect(cap(a.Status.Inventory)).To(Equal(len(a.Status.Inventory)))
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	g.Expect(same(a.Status.Revision, b.Spec.Revision)).To(BeTrue(), "the revision")
	g.Expect(same(a.Status.Inventory[0].Cluster, b.Status.Inventory[9].Cluster)).To(BeTrue(), "the inventory's cluster")
	g.Expect(same(a.Status.Conditions[0].Message, b.Status.Conditions[0].Message)).To(BeTrue(), "a condition's message")
	g.Expect(same(a.Namespace, b.Namespace)).To(BeTrue(), "the namespace")
	runtime.KeepAlive(held)

	managed := decode("c")
	managed.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "convoy"}}
	g.Expect(transform(managed).ManagedFields).To(BeNil(), "the transform it wraps still runs")

	od := &convoyv1alpha1.ObjectDeployment{Status: a.Status}
	od.Status.Inventory = append(make([]convoyv1alpha1.InventoryEntry, 0, 32), a.Status.Inventory...)
	out, err := opts.DefaultTransform(od)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.(*convoyv1alpha1.ObjectDeployment).Status).To(Equal(a.Status), "an ObjectDeployment's status is compacted alike")
	g.Expect(cap(od.Status.Inventory)).To(Equal(len(od.Status.Inventory)))

	other := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"a": "b"}}}
	g.Expect(opts.DefaultTransform(other)).To(BeIdenticalTo(other), "other objects are left alone")
	g.Expect(other.Labels).To(Equal(map[string]string{"a": "b"}))
}

// trimmed returns a copy of obj as the cache of applied objects keeps it.
func trimmed(g Gomega, obj *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	out, err := trimAppliedMetadata(obj.DeepCopy())
	g.Expect(err).NotTo(HaveOccurred())
	return out.(*metav1.PartialObjectMetadata)
}

// The cache keeps what the watches read, and a digest of the rest that changes with it.
func TestTrimAppliedMetadataKeepsWhatTheWatchesRead(t *testing.T) {
	g := NewWithT(t)
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "agent", UID: "u1", ResourceVersion: "7", Generation: 3,
		Labels: map[string]string{
			convoyv1alpha1.PackageNameLabel: "app", convoyv1alpha1.PackageNamespaceLabel: "ns",
			convoyv1alpha1.OwnerKindLabel: "ObjectDeployment", convoyv1alpha1.ShardLabel: "a",
			convoyv1alpha1.HostedClusterLabel: "hcp", "app.kubernetes.io/name": "agent"},
		Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 200<<10)},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		OwnerReferences: []metav1.OwnerReference{{Name: "owner"}},
		Finalizers:      []string{"example.com/keep"},
	}}
	got := trimmed(g, obj)

	g.Expect(got.Labels).To(HaveLen(4))
	g.Expect(got.Labels).To(HaveKeyWithValue(convoyv1alpha1.PackageNameLabel, "app"), "the ownership labels, as they are")
	g.Expect(got.Labels).To(HaveKeyWithValue(convoyv1alpha1.PackageNamespaceLabel, "ns"))
	g.Expect(got.Labels).To(HaveKeyWithValue(convoyv1alpha1.OwnerKindLabel, "ObjectDeployment"))
	g.Expect(len(got.Labels[metadataDigestLabel])).To(BeNumerically("<=", 16), "200 KiB of annotation cost 16 bytes")
	g.Expect(got.Annotations).To(BeNil(), "one map, not two")
	g.Expect(trimmed(g, got)).To(Equal(got), "trimming a trimmed object changes nothing")
	g.Expect(got.ManagedFields).To(BeNil())
	g.Expect(got.OwnerReferences).To(BeNil())
	g.Expect(got.Finalizers).To(BeNil())
	g.Expect([]any{got.Namespace, got.Name, got.UID, got.ResourceVersion, got.Generation}).
		To(Equal([]any{obj.Namespace, obj.Name, obj.UID, obj.ResourceVersion, obj.Generation}))
	now := metav1.Now()
	g.Expect(trimmed(g, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}).DeletionTimestamp).
		To(Equal(&now), "the deletion is kept")

	changed := func(edit func(*metav1.PartialObjectMetadata)) bool {
		o := obj.DeepCopy()
		edit(o)
		return !statusOnlyUpdate(got, trimmed(g, o))
	}
	g.Expect(changed(func(*metav1.PartialObjectMetadata) {})).To(BeFalse(), "nothing changed")
	g.Expect(changed(func(o *metav1.PartialObjectMetadata) { o.ResourceVersion = "8"; o.ManagedFields = nil })).
		To(BeFalse(), "status only: neither the generation, the labels nor the annotations")
	g.Expect(changed(func(o *metav1.PartialObjectMetadata) {
		o.Annotations["kubectl.kubernetes.io/last-applied-configuration"] += "y"
	})).
		To(BeTrue(), "an annotation changed")
	g.Expect(changed(func(o *metav1.PartialObjectMetadata) { o.Labels["app.kubernetes.io/name"] = "other" })).
		To(BeTrue(), "a label outside ownership changed")
	g.Expect(changed(func(o *metav1.PartialObjectMetadata) {
		o.Annotations["app.kubernetes.io/name"] = o.Labels["app.kubernetes.io/name"]
		delete(o.Labels, "app.kubernetes.io/name")
	})).To(BeTrue(), "a label moved to an annotation")
	g.Expect(changed(func(o *metav1.PartialObjectMetadata) { o.Labels[convoyv1alpha1.PackageNameLabel] = "other" })).
		To(BeTrue(), "the owner changed")
	g.Expect(changed(func(o *metav1.PartialObjectMetadata) { o.Labels[convoyv1alpha1.ShardLabel] = "b" })).
		To(BeTrue(), "the shard changed")
	digest := func(annotations map[string]string) string { return digestOf(nil, annotations) }
	g.Expect(digest(map[string]string{"a": "x\x00annotation\x00b\x00y"})).NotTo(Equal(digest(map[string]string{"a": "x", "b": "y"})),
		"a value that spells out further annotations")

	bare := trimmed(g, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "bare"}})
	g.Expect(bare.Labels).To(BeNil(), "nothing to digest")
	g.Expect(bare.Annotations).To(BeNil())
	owned := trimmed(g, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{
		convoyv1alpha1.PackageNameLabel: "app", convoyv1alpha1.PackageNamespaceLabel: strings.Clone("ns")}}})
	g.Expect(owned.Labels).To(Equal(map[string]string{
		convoyv1alpha1.PackageNameLabel: "app", convoyv1alpha1.PackageNamespaceLabel: "ns"}), "no digest of nothing")
	g.Expect(unsafe.StringData(owned.Labels[convoyv1alpha1.PackageNamespaceLabel])).To(Equal(unsafe.StringData(owned.Namespace)),
		"the package namespace shares the namespace's string")
	tombstone := toolscache.DeletedFinalStateUnknown{Key: "ns/agent", Obj: obj}
	g.Expect(trimAppliedMetadata(tombstone)).To(Equal(tombstone))
}

// The transform, in a metadata cache of the real API server, keeps an annotated object small and
// still tells an annotation's change from a status-only update.
func TestAppliedCacheHoldsTrimmedMetadata(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := fleet.NewNamespaceIn(t, env.Client)
	applied, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultTransform: trimAppliedMetadata})
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = applied.Start(ctx) }()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent",
		Labels:      map[string]string{convoyv1alpha1.PackageNameLabel: "app", convoyv1alpha1.PackageNamespaceLabel: ns},
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 100<<10)}}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	cached := func(g Gomega) *metav1.PartialObjectMetadata {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		g.Expect(applied.Get(ctx, client.ObjectKeyFromObject(cm), obj)).To(Succeed())
		return obj
	}
	var before *metav1.PartialObjectMetadata
	g.Eventually(func(g Gomega) {
		before = cached(g)
		g.Expect(before.Labels).To(HaveLen(3))
		g.Expect(before.Labels).To(HaveKey(metadataDigestLabel))
		g.Expect(before.Annotations).To(BeNil())
		g.Expect(before.ManagedFields).To(BeNil())
	}).Should(Succeed())

	cm.Annotations["kubectl.kubernetes.io/last-applied-configuration"] += "y"
	g.Expect(env.Client.Update(ctx, cm)).To(Succeed())
	g.Eventually(func(g Gomega) {
		after := cached(g)
		g.Expect(after.ResourceVersion).NotTo(Equal(before.ResourceVersion))
		g.Expect(statusOnlyUpdate(before, after)).To(BeFalse(), "the annotation's change is seen")
	}).Should(Succeed())
}
