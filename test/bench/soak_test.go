package bench

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convoy-gitops/convoy/test/fleet"
)

// soakTestEnv turns on TestSoakForcePushThenRecommit, which `make test` leaves out.
const soakTestEnv = "CONVOY_TEST_SOAK"

// TestSoakShort is the 2-minute version of `make soak`: 20 HostedClusters (3 with a hosted API
// server), the five add-ons and the same kinds of events, the leader kill, the Git outage and
// the force-push included, for 60 s of schedule. Its seed comes from the clock, or from
// CONVOY_SOAK_SEED to replay a failure; it is logged either way. The slopes are logged, not
// judged: a half of 30 s is mostly warm-up. It runs in `make test`; `make soak-short` runs it
// alone. A failure keeps the run's work folder, whose controller logs (--v=1) it names, and
// prints the statuses of the GitSource and of the HostedClusterPackage that did not settle.
func TestSoakShort(t *testing.T) {
	fleet.RequireAPIServers(t)
	ctrllog.SetLogger(logr.Discard())
	g := NewWithT(t)
	var seed uint64
	if raw := os.Getenv("CONVOY_SOAK_SEED"); raw != "" {
		var err error
		seed, err = strconv.ParseUint(raw, 10, 64)
		g.Expect(err).NotTo(HaveOccurred(), "CONVOY_SOAK_SEED")
	}
	var buf bytes.Buffer
	log := io.Writer(&buf)
	if testing.Verbose() {
		log = io.MultiWriter(&buf, os.Stderr)
	}
	work := keptWorkDir(t)
	res, err := RunSoak(context.Background(), SoakConfig{Clusters: 20, HostedClusters: 3, Duration: 60 * time.Second,
		Seed: seed, SampleEvery: 5 * time.Second, EventEvery: 3 * time.Second, GitDownFor: 8 * time.Second,
		BrokenFor: 15 * time.Second, ConvoyBinary: buildConvoy(t), Log: log, WorkDir: work, ControllerVerbosity: 1})
	var table bytes.Buffer
	PrintSoakTable(&table, res)
	t.Logf("seed %d\n%s", res.Seed, table.String())
	g.Expect(err).NotTo(HaveOccurred(), "seed %d\n%s", res.Seed, buf.String())
	g.Expect(res.Passed()).To(BeTrue(), "seed %d\n%s", res.Seed, buf.String())
	g.Expect(res.Samples).NotTo(BeEmpty())
	last := res.Samples[len(res.Samples)-1]
	g.Expect(last.Goroutines).To(BeNumerically(">", 0), "the controller's go_goroutines")
	g.Expect(last.Objects["Package"]).To(BeNumerically(">", 0), "the Packages counted")
}

// keptWorkDir returns a work folder for a run that is removed when the test passes and kept
// when it fails, with the controllers' logs in it listed.
func keptWorkDir(t *testing.T) string {
	t.Helper()
	work, err := os.MkdirTemp("", "convoy-soak-short-")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(work)
			return
		}
		logs, _ := filepath.Glob(filepath.Join(work, "env-*", "controller*.log"))
		standby, _ := filepath.Glob(filepath.Join(work, "env-*", "standby", "controller*.log"))
		t.Logf("the run's work folder is kept: %s; the controllers' logs (-v=1): %s", work,
			strings.Join(append(logs, standby...), " "))
	})
	return work
}
