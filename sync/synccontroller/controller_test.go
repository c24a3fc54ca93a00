package synccontroller

import (
	"reflect"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

func TestSameSyncStatusComparesEveryField(t *testing.T) {
	NewWithT(t).Expect(reflect.TypeFor[convoyv1alpha1.SyncStatus]().NumField()).To(Equal(8),
		"a field added to SyncStatus must be compared by sameSyncStatus, and changed below")
	at := metav1.NewTime(time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC))
	settled := func() *convoyv1alpha1.Package {
		p := &convoyv1alpha1.Package{}
		p.Status = convoyv1alpha1.SyncStatus{ObservedGeneration: 2, Revision: "r", LastAttemptedRevision: "r",
			LastHandledReconcileAt: "now",
			Conditions:             []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Succeeded", LastTransitionTime: at}},
			Phases:                 []convoyv1alpha1.PhaseStatus{{Name: "deploy", Objects: 3, Available: true}},
			Inventory:              []convoyv1alpha1.InventoryEntry{{ID: "ns_a__ConfigMap", Version: "v1", Cluster: "management", Phase: "deploy"}}}
		return p
	}
	g := NewWithT(t)
	g.Expect(sameSyncStatus(settled(), settled())).To(BeTrue())
	g.Expect(sameSyncStatus(&convoyv1alpha1.ObjectDeployment{}, &convoyv1alpha1.ObjectDeployment{})).To(BeTrue())
	g.Expect(sameSyncStatus(settled(), &convoyv1alpha1.GitSource{})).To(BeFalse(), "another kind is compared as JSON")

	for name, change := range map[string]func(*convoyv1alpha1.SyncStatus){
		"observedGeneration":     func(s *convoyv1alpha1.SyncStatus) { s.ObservedGeneration++ },
		"revision":               func(s *convoyv1alpha1.SyncStatus) { s.Revision = "s" },
		"lastAttemptedRevision":  func(s *convoyv1alpha1.SyncStatus) { s.LastAttemptedRevision = "s" },
		"lastHandledReconcileAt": func(s *convoyv1alpha1.SyncStatus) { s.LastHandledReconcileAt = "later" },
		"a condition's message":  func(s *convoyv1alpha1.SyncStatus) { s.Conditions[0].Message = "m" },
		"a condition's time":     func(s *convoyv1alpha1.SyncStatus) { s.Conditions[0].LastTransitionTime.Time = at.Add(time.Second) },
		"a condition's location": func(s *convoyv1alpha1.SyncStatus) { s.Conditions[0].LastTransitionTime.Time = at.Local() },
		"a phase":                func(s *convoyv1alpha1.SyncStatus) { s.Phases[0].Available = false },
		"an inventory entry":     func(s *convoyv1alpha1.SyncStatus) { s.Inventory[0].Version = "v2" },
		"one entry more":         func(s *convoyv1alpha1.SyncStatus) { s.Inventory = append(s.Inventory, s.Inventory[0]) },
		"a warning":              func(s *convoyv1alpha1.SyncStatus) { s.Warnings = []string{"a.yaml:1: unsupported: w"} },
	} {
		after := settled()
		change(&after.Status)
		g.Expect(sameSyncStatus(settled(), after)).To(BeFalse(), name)
	}
}
