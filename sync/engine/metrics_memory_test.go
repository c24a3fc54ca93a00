package engine

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// The ledger's size is exported per controller: the soak (test/bench) watches it for growth.
func TestLedgerSizeIsExported(t *testing.T) {
	g := NewWithT(t)
	m := newMemory(Options{Controller: "ledger-gauge-test"})
	c := (&Target{Namespace: "ns", Name: "pkg"}).cluster(convoyv1alpha1.ClassManagement)
	s := desiredState{obj: kubetest.ConfigMap("ns", "a", nil), ok: true}
	live := s.obj.DeepCopy()
	live.SetResourceVersion("1")
	m.ledger.record(c, s, live)
	done := m.ledger.begin(c, desiredState{obj: kubetest.ConfigMap("ns", "b", nil), ok: true})

	want := `
# HELP convoy_sync_ledger_applying Objects with an apply in flight in the sync engine's ledger, by controller.
# TYPE convoy_sync_ledger_applying gauge
convoy_sync_ledger_applying{controller="ledger-gauge-test"} 1
# HELP convoy_sync_ledger_entries Objects the sync engine's ledger holds a state of, by controller (bounded; past the bound it starts over).
# TYPE convoy_sync_ledger_entries gauge
convoy_sync_ledger_entries{controller="ledger-gauge-test"} 1
`
	g.Expect(testutil.CollectAndCompare(onlyController(m), strings.NewReader(want))).To(Succeed())
	done(nil, nil)
}

// onlyController is a collector of m alone, so that the other tests' engines stay out.
func onlyController(m *memory) *memoryCollector {
	return &memoryCollector{byController: map[string]*memory{m.controller: m}}
}
