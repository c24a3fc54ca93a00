package synccontroller

import (
	"context"
	"strings"
	"testing"
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
