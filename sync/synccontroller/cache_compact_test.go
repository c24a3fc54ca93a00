package synccontroller

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"unique"
	"unsafe"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
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
