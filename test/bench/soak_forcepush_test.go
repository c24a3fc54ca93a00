package bench

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convoy-gitops/convoy/test/fleet"
)

// TestSoakForcePushThenRecommit replays the sequence of the soak's one failure on a small
// fleet, the controller as a process: the leader killed (the new leader has a store of its
// own), the plain add-on's revision 2 committed (P), a Git outage, a force-push back to P's
// parent (revision 1), then a new commit of revision 2 (G): every add-on settles at its goal.
func TestSoakForcePushThenRecommit(t *testing.T) {
	if os.Getenv(soakTestEnv) == "" {
		t.Skipf("exploratory (%s=1)", soakTestEnv)
	}
	fleet.RequireAPIServers(t)
	ctrllog.SetLogger(logr.Discard())
	g := NewWithT(t)
	ctx := context.Background()
	var buf bytes.Buffer
	log := io.MultiWriter(&buf, os.Stderr)
	cfg := SoakConfig{Clusters: 6, HostedClusters: 1, Duration: time.Minute, Seed: 1, GitDownFor: 8 * time.Second,
		BrokenFor: 15 * time.Second, ConvoyBinary: buildConvoy(t), Log: log, WorkDir: keptWorkDir(t),
		ControllerVerbosity: 1}.withDefaults()
	s := &soakRun{cfg: cfg, res: &SoakResults{Seed: cfg.Seed}, rng: rand.New(rand.NewPCG(1, 2)),
		choices: rand.New(rand.NewPCG(3, 4)), contents: map[string]map[string]soakRev{}, heads: map[string]time.Time{}, firstHeads: map[string]time.Time{},
		partition: map[string]string{}, skip: map[string]bool{}, hosted: map[string]bool{}, labels: map[string]map[string]string{}}
	for _, k := range soakKinds {
		s.addons = append(s.addons, &soakAddon{kind: k, rev: 1})
	}
	g.Expect(s.setUp(ctx, cfg.WorkDir)).To(Succeed())
	defer func() { _ = s.e.close() }()
	s.start = time.Now()
	plain := s.addons[0]
	g.Expect(s.killLeader(ctx)).To(Succeed())
	plain.rev++
	plain.broken = true
	g.Expect(s.commit(ctx, "soak-plain: revision 2, broken", plain)).To(Succeed())
	time.Sleep(15 * time.Second)
	g.Expect(s.gitOutage(ctx)).To(Succeed())
	g.Expect(s.forcePush(ctx)).To(Succeed())
	g.Expect(plain.rev).To(Equal(1))
	g.Expect(plain.broken).To(BeFalse())
	time.Sleep(2 * time.Second)
	plain.rev++
	g.Expect(s.commit(ctx, "soak-plain: revision 2", plain)).To(Succeed())
	g.Expect(s.waitSettled(ctx, 2*time.Minute)).To(Succeed())
}
