package memory

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The ledger's size is exported per controller: the soak (test/bench) watches it for growth.
func TestLedgerSizeIsExported(t *testing.T) {
	g := NewWithT(t)
	s := New(Options{Controller: "ledger-gauge-test"})
	s.Applied(management, []Write{{Desired: desired("a", 1), Live: at("1")}})
	s.Applying(management, []Desired{desired("b", 1)})

	want := `
# HELP convoy_sync_ledger_applying Objects with an apply in flight in the sync engine's ledger, by controller.
# TYPE convoy_sync_ledger_applying gauge
convoy_sync_ledger_applying{controller="ledger-gauge-test"} 1
# HELP convoy_sync_ledger_entries Objects the sync engine's ledger holds a state of, by controller (bounded; past the bound it starts over).
# TYPE convoy_sync_ledger_entries gauge
convoy_sync_ledger_entries{controller="ledger-gauge-test"} 1
`
	g.Expect(testutil.CollectAndCompare(onlyController(s), strings.NewReader(want))).To(Succeed())
	s.Applied(management, []Write{{Desired: desired("b", 1)}})
}

// onlyController is a collector of s alone, so that the other tests' memories stay out.
func onlyController(s *Store) *storeCollector {
	return &storeCollector{byController: map[string]*Store{s.controller: s}}
}
