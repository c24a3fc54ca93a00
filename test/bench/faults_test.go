package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/fleet"
)

// TestFaultsShort is the short subset of `make faults` that runs with the tests: every
// fault at 20 HostedClusters, each invariant checked (about 2 minutes on 2 cores).
func TestFaultsShort(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	convoy := buildConvoy(t)

	var log bytes.Buffer
	res, err := RunFaults(context.Background(), FaultsConfig{Clusters: 20, ConvoyBinary: convoy, Log: &log, GitDownFor: 5 * time.Second})
	g.Expect(err).NotTo(HaveOccurred(), log.String())
	var table bytes.Buffer
	PrintFaultsTable(&table, res)
	t.Log("\n" + table.String())
	g.Expect(res.Rows).To(HaveLen(len(AllFaults)))
	for _, row := range res.Rows {
		g.Expect(row.Error).To(BeEmpty(), row.Fault)
		g.Expect(row.MaxUnavailable).To(BeNumerically("<=", row.Budget), row.Fault)
		g.Expect(row.ObjectsLost).To(BeZero(), row.Fault)
		g.Expect(row.WrongRevision).To(BeZero(), row.Fault)
		if row.Fault == FaultKill || row.Fault == FaultKillTwice || row.Fault == FaultFreshStore {
			g.Expect(row.Restarts).To(BeNumerically(">=", 1), row.Fault)
		}
	}
	g.Expect(res.Passed()).To(BeTrue())
}
