package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/promotion"
	"github.com/convoy-gitops/convoy/sources"
)

// The sectors scenario's settings.
const (
	// sectorsPoll is the GitSources' spec.interval: without a webhook, a downstream sector sees
	// an upstream completion within one.
	sectorsPoll = 5 * time.Second
	// sectorsSoak is each downstream sector's soak after the one before it.
	sectorsSoak = 5 * time.Second
	// sectorsPublish is the controllers' --promotion-publish-interval.
	sectorsPublish = time.Second
)

// sectorNames are the scenario's sectors, a chain: each waits for the one before.
var sectorNames = []string{"canary", "eu", "us"}

// sectorsRun is the sectors scenario: one management cluster per sector, each with its
// HostedClusters, its controller and its HostedClusterPackage, sharing the first one's Git
// repository as the bus.
type sectorsRun struct {
	cfg  Config
	res  *Results
	n    int
	envs []*env
}

// runSectors measures how long after an upstream sector completed and soaked a commit the next
// sector pins it, polling and with a poll requested as a webhook would, and the writes the bus
// adds per Package.
func runSectors(ctx context.Context, cfg Config, res *Results) error {
	s := &sectorsRun{cfg: cfg, res: res, n: cfg.SectorClusters}
	defer s.close()
	logf(cfg, "sectors: %d management clusters of %d HostedClusters, one repository", len(sectorNames), s.n)
	for range sectorNames {
		e, err := newEnv(ctx, cfg, envInput{Clusters: s.n})
		if err != nil {
			return err
		}
		s.envs = append(s.envs, e)
	}
	if err := s.prepare(ctx); err != nil {
		return err
	}
	for _, webhook := range []bool{false, true} {
		if err := s.promote(ctx, webhook); err != nil {
			return err
		}
	}
	return nil
}

func (s *sectorsRun) close() {
	for _, e := range s.envs {
		_ = e.close()
	}
}

// bus is the repository every sector follows: the canary's.
func (s *sectorsRun) bus() *env { return s.envs[0] }

// prepare commits the sector map, points every GitSource at the bus, starts the controllers
// with their identities, creates the HostedClusterPackages and waits until each sector runs the
// first commit.
func (s *sectorsRun) prepare(ctx context.Context) error {
	var m strings.Builder
	m.WriteString("apiVersion: convoy.dev/v1alpha1\nkind: SectorMap\nsectors:\n")
	for _, sector := range sectorNames {
		fmt.Fprintf(&m, "- name: %s\n  managementClusters: [mc-%s]\n", sector, sector)
	}
	commit, err := s.bus().repo.Commit("main", "Add the sector map", map[string]string{"sectors.yaml": m.String()})
	if err != nil {
		return err
	}
	s.bus().commit = commit
	// Anonymous pushes, as git http-backend serves them only when told: the management
	// clusters push their records with the GitSource's credentials, which are none here.
	if out, err := exec.CommandContext(ctx, "git", "--git-dir", s.bus().repo.Dir, "config", "http.receivepack", "true").CombinedOutput(); err != nil {
		return fmt.Errorf("enabling pushes over HTTP: %w: %s", err, out)
	}
	for i, e := range s.envs {
		if err := e.followBus(ctx, s.bus().git.HTTPURL(repoName)); err != nil {
			return err
		}
		e.ctrlArgs = append(e.ctrlArgs, "--management-cluster=mc-"+sectorNames[i], "--sector="+sectorNames[i],
			"--promotion-publish-interval="+sectorsPublish.String())
		if err := e.startController(ctx); err != nil {
			return err
		}
		if err := e.createSectorPackage(ctx, sectorNames[:i]); err != nil {
			return err
		}
	}
	for _, e := range s.envs {
		if err := e.waitSpec(ctx, commit, rolloutTimeout); err != nil {
			return err
		}
	}
	return nil
}

// followBus points the env's GitSource at url, polled every sectorsPoll.
func (e *env) followBus(ctx context.Context, url string) error {
	gs := &convoyv1alpha1.GitSource{}
	if err := e.admin.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: gitSourceName}, gs); err != nil {
		return err
	}
	patch := client.MergeFrom(gs.DeepCopy())
	gs.Spec.URL, gs.Spec.Interval = url, &metav1.Duration{Duration: sectorsPoll}
	return e.admin.Patch(ctx, gs, patch)
}

// createSectorPackage creates the HostedClusterPackage, instant, publishing its progress, after
// the sector before it (none for the first).
func (e *env) createSectorPackage(ctx context.Context, upstream []string) error {
	promo := &convoyv1alpha1.PromotionSpec{Publish: true}
	if n := len(upstream); n > 0 {
		promo.After = []convoyv1alpha1.UpstreamSector{{Sector: upstream[n-1], SoakSeconds: int64(sectorsSoak / time.Second)}}
	}
	return e.admin.Create(ctx, &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: hcpName},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			HostedClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench.convoy.dev/fleet": "true"}},
			Strategy:              strategy(false),
			Template:              convoyv1alpha1.PackageTemplate{Spec: e.packageTemplate(managementPath)},
			Promotion:             promo,
		},
	})
}

// waitSpec waits until every Package of the env pins commit and progressed.
func (e *env) waitSpec(ctx context.Context, commit string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	done := progressedAt(commit)
	for e.watch.countAll(done) < len(e.namespaces) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d Packages progressed at %.12s after %s", e.watch.countAll(done), len(e.namespaces), commit, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// readRecord reads the record mc published on the bus for hcpName, straight from the
// repository's storage (as fast as the Git server itself sees a push); false when none yet.
func (s *sectorsRun) readRecord(ctx context.Context, sector string) (promotion.Record, bool, error) {
	ref := sources.PromotionRef(sector, "mc-"+sector, hcpName)
	out, err := exec.CommandContext(ctx, "git", "--git-dir", s.bus().repo.Dir, "show", ref+":"+sources.PromotionRecordFile).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return promotion.Record{}, false, nil
		}
		return promotion.Record{}, false, err
	}
	rec, err := promotion.DecodeRecord(out)
	return rec, err == nil, err
}
