package bench

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convoy-gitops/convoy/test/fleet"
)

// TestFaultsQuick is the subset of `make faults` that runs with `make test`: QuickFaults at
// 20 HostedClusters, each invariant checked. TestFaultsShort (`make e2e`) runs ShortFaults.
func TestFaultsQuick(t *testing.T) {
	runFaults(t, QuickFaults)
}

// TestFaultsShort is the short subset of `make faults` that `make e2e` runs: ShortFaults at
// 20 HostedClusters (10 more for the hosted faults), each invariant checked (about 2.5
// minutes on 2 cores). The 1.3× bound of hosted-dead is logged, not required: at this size
// its rollouts take about a second, within the machine's noise.
func TestFaultsShort(t *testing.T) {
	runFaults(t, ShortFaults)
}

// runFaults runs the faults at 20 HostedClusters and checks every invariant of each.
func runFaults(t *testing.T, faults []string) {
	fleet.RequireAPIServers(t)
	ctrllog.SetLogger(logr.Discard())
	g := NewWithT(t)
	convoy := buildConvoy(t)

	var buf bytes.Buffer
	log := io.Writer(&buf)
	if testing.Verbose() {
		log = io.MultiWriter(&buf, os.Stderr) // what the harness does, as it does it
	}
	// Note: a shorter cap of the dead hosted clusters' backoff bounds the time they take to
	// recover (up to the default 2 min otherwise).
	res, err := RunFaults(context.Background(), FaultsConfig{Clusters: 20, Faults: faults, ConvoyBinary: convoy, Log: log,
		GitDownFor: 5 * time.Second, SettleTimeout: 90 * time.Second, ControllerArgs: []string{"--hosted-max-unreachable-backoff=10s"}})
	g.Expect(err).NotTo(HaveOccurred(), buf.String())
	var table bytes.Buffer
	PrintFaultsTable(&table, res)
	t.Log("\n" + table.String())
	g.Expect(res.Rows).To(HaveLen(len(faults)))
	for _, row := range res.Rows {
		g.Expect(row.Error).To(BeEmpty(), row.Fault)
		g.Expect(row.MaxUnavailable).To(BeNumerically("<=", row.Budget), row.Fault)
		g.Expect(row.ObjectsLost).To(BeZero(), row.Fault)
		g.Expect(row.WrongRevision).To(BeZero(), row.Fault)
		if row.Fault == FaultKillTwice {
			g.Expect(row.Restarts).To(BeNumerically(">=", 1), row.Fault)
		}
	}
	for _, row := range res.Rows {
		if row.Fault == FaultHostedDead {
			t.Logf("%s: %.2f× the all-healthy rollout (bound %.1f×)", row.Fault, row.Ratio, ratioBound)
			continue
		}
		g.Expect(row.Passed).To(BeTrue(), row.Fault)
	}
}
