package devdemo

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// sectorsDemo is one run of `convoy-dev --sectors`.
type sectorsDemo struct {
	out   io.Writer
	opts  Options
	start time.Time
	// url is the package repository's.
	url string
	mcs []*managementCluster
	// stops end the controllers, then the API servers, last started first.
	stops []func()
}

// addManagementCluster starts the sector's management cluster with its hosted clusters, applies
// the GitSource and the HostedClusterPackage, and starts its controller as mc-<sector>.
func (s *sectorsDemo) addManagementCluster(ctx context.Context, dir, url, sector string, upstream []string) error {
	m := &managementCluster{name: managementClusterOf(sector), sector: sector}
	fmt.Fprintf(s.out, "Starting management cluster %s (sector %s) with %d hosted clusters...\n", m.name, sector, s.opts.Clusters)
	f, err := simfleet.Start(ctx, simfleet.Options{BinaryDir: s.opts.Binaries})
	if err != nil {
		return err
	}
	s.stops = append(s.stops, func() { _ = f.Stop() })
	m.fleet = f
	clusters := devClusters(s.opts.Clusters)
	for i := range clusters {
		clusters[i].WithoutAPIServer = true
	}
	if _, err := f.AddHostedClusters(ctx, clusters...); err != nil {
		return err
	}
	m.kubeconfig = filepath.Join(filepath.Dir(s.opts.Kubeconfig), m.name, "kubeconfig")
	if err := writeKubeconfig(f, m.kubeconfig); err != nil {
		return err
	}
	if err := applySectorObjects(ctx, m, s.opts.Examples, url, upstream); err != nil {
		return err
	}
	return s.startController(ctx, dir, m)
}

// applySectorObjects applies the namespace, the GitSource of url and the HostedClusterPackage.
func applySectorObjects(ctx context.Context, m *managementCluster, examples, url string, upstream []string) error {
	gs, err := readObjects(filepath.Join(examples, "gitsource.yaml"))
	if err != nil {
		return err
	}
	for _, obj := range gs {
		if err := unstructured.SetNestedField(obj.Object, url, "spec", "url"); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(obj.Object, "2s", "spec", "interval"); err != nil {
			return err
		}
	}
	h, err := sectorsHostedClusterPackage(examples, upstream)
	if err != nil {
		return err
	}
	return applyObjects(ctx, m.fleet.Client, append([]*unstructured.Unstructured{namespaceObject(devNamespace)}, append(gs, h)...)...)
}

// startController runs the management cluster's controller, named after it and its sector,
// logging next to its kubeconfig.
func (s *sectorsDemo) startController(ctx context.Context, dir string, m *managementCluster) error {
	logPath := filepath.Join(filepath.Dir(m.kubeconfig), "controller.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	ctrlCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.opts.RunController(ctrlCtx, m.fleet.Config, filepath.Join(dir, m.name, "sources"), logFile,
			"--management-cluster="+m.name, "--sector="+m.sector, "--promotion-publish-interval=1s")
	}()
	s.stops = append(s.stops, func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(s.out, "controller of %s: %v\n", m.name, err)
		}
		_ = logFile.Close()
	})
	s.mcs = append(s.mcs, m)
	return nil
}

// stop ends what the demo started, controllers before API servers.
func (s *sectorsDemo) stop() {
	fmt.Fprintln(s.out, "Stopping the controllers and the API servers...")
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

func (s *sectorsDemo) printUsage() {
	fmt.Fprintf(s.out, "\nEach sector is one management cluster with its own controller; the repository is the bus.\n"+
		"Look at one, or at the bus, with:\n\n")
	for _, m := range s.mcs {
		fmt.Fprintf(s.out, "  KUBECONFIG=%s convoy status %s\n", m.kubeconfig, sectorsPackage)
	}
	fmt.Fprintf(s.out, "  convoy sectors --url %s --key %s\n\n", s.url, sectorsPackage)
}

// follow waits until every sector runs the first commit, commits a change, follows it sector by
// sector, checks each started only after the one before completed and soaked it, and then
// waits for Ctrl-C unless ExitAfterRollout.
func (s *sectorsDemo) follow(ctx context.Context, repo *gitserver.Repo) error {
	fmt.Fprintln(s.out, "First commit, sector by sector:")
	first, err := repo.Head("main")
	if err != nil {
		return err
	}
	if _, err := s.await(ctx, first); err != nil {
		return err
	}
	rules, err := os.ReadFile(filepath.Join(s.opts.Examples, "packages", sectorsChange))
	if err != nil {
		return err
	}
	commit, err := repo.Commit("main", "metrics-forwarder: record the API servers' error rate",
		map[string]string{sectorsChange: string(rules) + sectorsChangeRule})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "\nCommitted %s to main (a recording rule in %s); it moves sector by sector:\n", shortCommit(commit), sectorsChange)
	times, err := s.await(ctx, commit)
	if err != nil {
		return err
	}
	if err := s.printSectorsSummary(commit, times); err != nil {
		return err
	}
	if s.opts.PrintSectors != nil {
		// Each controller pushes its record at most every --promotion-publish-interval (1s
		// here): the last sector's completion reaches the bus that long after its rollout.
		time.Sleep(2 * time.Second)
		fmt.Fprintf(s.out, "\nThe bus, as `convoy sectors --url %s --key %s` reads it from any machine:\n\n", s.url, sectorsPackage)
		if err := s.opts.PrintSectors(ctx, s.url, sectorsPackage, s.out); err != nil {
			return err
		}
	}
	if s.opts.ExitAfterRollout {
		return nil
	}
	fmt.Fprintln(s.out, "\nPress Ctrl-C to stop.")
	<-ctx.Done()
	return nil
}

// sectorsAwaitBound bounds the wait for a commit to cross every sector: a controller that died
// would otherwise keep the demo waiting.
const sectorsAwaitBound = 10 * time.Minute

// sectorTimes are when a sector started and completed a commit.
type sectorTimes struct{ started, completed time.Time }

// await prints each management cluster's rollout line when it changes, until every one runs
// commit on all its clusters, and returns when each started and completed it.
func (s *sectorsDemo) await(ctx context.Context, commit string) ([]sectorTimes, error) {
	times := make([]sectorTimes, len(s.mcs))
	last := make([]string, len(s.mcs))
	deadline := time.Now().Add(sectorsAwaitBound)
	for {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("commit %s has not reached every sector after %s: see each management cluster's controller.log",
				shortCommit(commit), sectorsAwaitBound)
		}
		done := 0
		for i, m := range s.mcs {
			line, running, complete, err := s.sectorState(ctx, m, commit)
			if err != nil {
				return nil, err
			}
			if line != last[i] {
				last[i] = line
				fmt.Fprintf(s.out, "  %6.1fs  %-7s %s\n", time.Since(s.start).Seconds(), m.sector, line)
			}
			if running && times[i].started.IsZero() {
				times[i].started = time.Now()
			}
			if complete {
				if times[i].completed.IsZero() {
					times[i].completed = time.Now()
				}
				done++
			}
		}
		if done == len(s.mcs) {
			return times, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.opts.Refresh):
		}
	}
}

// sectorState reads one management cluster's rollout: its line (the promotion's hold or
// wait when one holds it, else the rollout's), whether commit is its update revision's and
// whether every cluster runs it.
func (s *sectorsDemo) sectorState(ctx context.Context, m *managementCluster, commit string) (string, bool, bool, error) {
	snaps, err := fleetview.ReadStatus(ctx, m.fleet.Client, sectorsPackage)
	if err != nil {
		return "", false, false, err
	}
	snap := snaps[0]
	st := snap.HostedClusterPackage.Status
	running := st.UpdateRevision != "" && snap.Revisions[st.UpdateRevision].Commit == commit
	report := fleetview.NewReport(snap)
	line := report.Line()
	if !running {
		line = cmp.Or(promotionWait(st), line)
	}
	return line, running, running && rolloutDone(st, s.opts.Clusters), nil
}

// promotionWait says what holds the commit upstream, when something does: the Promotion gate
// (with the end of the soak, once known), a held bus, or the wait for the first commit.
func promotionWait(st convoyv1alpha1.HostedClusterPackageStatus) string {
	if g := st.Gate; g != nil && g.Type == convoyv1alpha1.GatePromotion {
		if g.Until != nil {
			return fmt.Sprintf("%s Soaked at %s.", g.Message, g.Until.UTC().Format(time.TimeOnly))
		}
		return g.Message
	}
	if p := st.Promotion; p != nil && p.Message != "" {
		return p.Message
	}
	if c := apimeta.FindStatusCondition(st.Conditions, convoyv1alpha1.ReadyCondition); c != nil &&
		c.Reason == convoyv1alpha1.AwaitingPromotionReason {
		return c.Message
	}
	return ""
}

// printSectorsSummary prints when each sector started and completed commit, and checks that
// each started no sooner than the soak after the one before completed it.
func (s *sectorsDemo) printSectorsSummary(commit string, times []sectorTimes) error {
	base := times[0].started
	fmt.Fprintf(s.out, "\nCommit %s across the sectors (each waits %ds after the one before completed it):\n", shortCommit(commit), sectorSoak)
	for i, m := range s.mcs {
		fmt.Fprintf(s.out, "  %-7s started +%5.1fs  completed +%5.1fs\n", m.sector,
			times[i].started.Sub(base).Seconds(), times[i].completed.Sub(base).Seconds())
		// Note: the demo reads every Refresh, and a record says its time to the second.
		if i > 0 && times[i].started.Before(times[i-1].completed.Add(sectorSoak*time.Second-2*time.Second)) {
			return fmt.Errorf("sector %s started %s before %s had completed and soaked it", m.sector, shortCommit(commit), s.mcs[i-1].sector)
		}
	}
	return nil
}
