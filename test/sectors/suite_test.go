package sectors

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/forge"
)

// The management clusters of the suite, and their sectors: canary first, then eu and us.
var managementClusters = []struct{ name, sector string }{
	{"mc-canary-1", "canary"}, {"mc-canary-2", "canary"}, {"mc-eu-1", "eu"}, {"mc-us-1", "us"},
}

// runEnv opts in to the suite's test: make e2e (its last step) and make e2e-sectors set it.
const runEnv = "CONVOY_TEST_SECTORS"

var (
	// fleets are the management clusters' API servers, by name.
	fleets map[string]*fleet.Fleet
	srv    *forge.Forge
)

// TestMain quiets controller-runtime's logger, which the fleets' clients would otherwise warn
// about.
func TestMain(m *testing.M) {
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	// Every wait of the story is for a poll a second and a rollout of two clusters.
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	os.Exit(m.Run())
}

// startServers starts Gitea and the four management API servers for t, one at a time: four
// API servers starting at once on two cores miss their timeout. They start in the test, not in
// TestMain, so that `make test`, which skips the test, starts none.
func startServers(t *testing.T) {
	t.Helper()
	fleet.RequireAPIServers(t)
	if os.Getenv(runEnv) == "" {
		t.Skipf("four management clusters and Gitea: run with %s=1 (make e2e-sectors)", runEnv)
	}
	g := NewWithT(t)
	ctx := context.Background()
	f, err := forge.Start(ctx, forge.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(f.Stop)
	srv = f
	fleets = map[string]*fleet.Fleet{}
	for _, mc := range managementClusters {
		fl, err := fleet.Start(ctx, fleet.Options{})
		g.Expect(err).NotTo(HaveOccurred(), fmt.Sprintf("starting management cluster %s", mc.name))
		t.Cleanup(func() { _ = fl.Stop() })
		fleets[mc.name] = fl
	}
}
