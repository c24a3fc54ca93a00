package pass

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// BenchmarkStatusPatch measures the patch of a Package whose status a pass changed: four
// conditions and ten inventory entries, one message different.
func BenchmarkStatusPatch(b *testing.B) {
	mk := func(msg string) *convoyv1alpha1.Package {
		p := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: 2, Labels: map[string]string{"a": "b"}}}
		p.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True", Reason: "R", Message: msg, LastTransitionTime: metav1.NewTime(time.Unix(1, 0))},
			{Type: "Reconciling", Status: "False", Reason: "R", Message: msg}, {Type: "Stalled", Status: "False", Reason: "R"}, {Type: "Available", Status: "True", Reason: "R"}}
		for i := 0; i < 10; i++ {
			p.Status.Inventory = append(p.Status.Inventory, convoyv1alpha1.InventoryEntry{ID: fmt.Sprintf("ns_w%d_example.com_Widget", i), Version: "v1", Cluster: "management", Phase: "deploy"})
		}
		return p
	}
	before, after := mk("rev1"), mk("rev2")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := statusPatch(before, after); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
