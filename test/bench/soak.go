package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// SoakConfig is one endurance run (`make soak`).
type SoakConfig struct {
	// Clusters is the number of HostedClusters at the start; default 200.
	Clusters int `json:"clusters"`
	// HostedClusters is how many of them have a hosted API server, where the hosted add-on
	// lands; default 10.
	HostedClusters int `json:"hostedClusters"`
	// Duration is the length of the schedule, quiescence included; default 60 minutes.
	Duration time.Duration `json:"duration"`
	// Seed drives the schedule; zero picks one from the clock (the results say which).
	Seed uint64 `json:"seed"`
	// SampleEvery is the period of the samples; default 10 s.
	SampleEvery time.Duration `json:"sampleEvery"`
	// EventEvery is the mean time between two events of the schedule; default 15 s.
	EventEvery time.Duration `json:"eventEvery"`
	// GitDownFor is how long the Git outage lasts; default 2 minutes.
	GitDownFor time.Duration `json:"gitDownFor"`
	// BrokenFor is how long a broken commit stays at the head before its fix; default 2 minutes.
	BrokenFor time.Duration `json:"brokenFor"`
	// Concurrency is the controller's --concurrency; default 4.
	Concurrency int `json:"concurrency"`
	// ConvoyBinary is bin/convoy; the run copies it into its work folder, so that the render
	// processes it starts are told from any other convoy's by their executable.
	ConvoyBinary string `json:"-"`
	// KeepWorkDir keeps the controller logs and Git storage after the run.
	KeepWorkDir bool `json:"-"`
	// WorkDir is the run's work folder (controller logs, Git storage); empty makes a temporary
	// one. The run does not remove a WorkDir it was given.
	WorkDir string `json:"-"`
	// ControllerVerbosity is the controllers' --v: 1 logs what the GitSource and rollout
	// controllers decided, which a failure needs to be explained.
	ControllerVerbosity int `json:"controllerVerbosity,omitempty"`
	// Log receives progress lines; nil is quiet.
	Log io.Writer `json:"-"`
}

// withDefaults fills in the defaults.
func (c SoakConfig) withDefaults() SoakConfig {
	c.Clusters = cmp(c.Clusters, 200)
	c.HostedClusters = cmp(c.HostedClusters, 10)
	c.Concurrency = cmp(c.Concurrency, 4)
	durations := []struct {
		d   *time.Duration
		def time.Duration
	}{{&c.Duration, time.Hour}, {&c.SampleEvery, 10 * time.Second}, {&c.EventEvery, 15 * time.Second},
		{&c.GitDownFor, 2 * time.Minute}, {&c.BrokenFor, 2 * time.Minute}}
	for _, d := range durations {
		if *d.d <= 0 {
			*d.d = d.def
		}
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	return c
}

// soakPartitionKey is the label the soak's HostedClusterPackages partition by, and
// soakPartitions its values in rollout order.
const soakPartitionKey = "hypershift.openshift.io/risk-group"

var soakPartitions = []string{"early", "normal", "late"}

// soakHistoryLimit is the revisionHistoryLimit of the soak's HostedClusterPackages: small, so
// that a run makes more revisions than it keeps.
const soakHistoryLimit = 3

// soakRun is the state of one soak: the fleet, the add-ons and what the schedule did, which
// the invariants are checked against.
type soakRun struct {
	cfg SoakConfig
	e   *env
	// rng draws the schedule up front (drawSchedule); choices are the random choices of the
	// event running.
	rng     *rand.Rand
	choices *rand.Rand
	addons  []*soakAddon
	res     *SoakResults
	start   time.Time
	// exe is the controller's binary, copied into the work folder.
	exe string

	mu sync.Mutex
	// contents maps each commit pushed to the add-ons' revisions it holds; heads maps it to
	// when it last became the head of the branch.
	contents map[string]map[string]soakRev
	heads    map[string]time.Time
	// firstHeads maps each commit to when it first became the head.
	firstHeads map[string]time.Time
	head       string
	// partition is each live HCP namespace's partition; skip are the namespaces the budget and
	// barrier do not judge (unavailable, relabelled or deleted HostedClusters).
	partition map[string]string
	skip      map[string]bool
	// live are the HostedClusters not deleted, hosted those with an API server.
	live   []*simfleet.HostedCluster
	hosted map[string]bool
	// labels are each live HostedCluster's labels, by HCP namespace.
	labels map[string]map[string]string
	// pending are the schedule's later actions (a fix, an unpause...), by due time.
	pending []soakAction
	// previousHead is the head before the last commit, where a force-push goes back to.
	previousHead string
	nextCluster  int
	// store is the Git store of the controller of the run, once it moved (killLeader).
	store string
	// budgets are judgeBudget's memory, by add-on.
	budgets map[string]*budgetWatch
}

// soakRev is an add-on's revision in a commit.
type soakRev struct {
	Rev    int  `json:"rev"`
	Broken bool `json:"broken,omitempty"`
}

// soakAction is a later step of an event.
type soakAction struct {
	due  time.Time
	name string
	do   func(context.Context) error
}

// RunSoak starts the fleet and the controller, installs the five add-ons, runs the seeded
// schedule for cfg.Duration while sampling, then lets the fleet settle and checks the
// invariants at the end. It returns the results even when a step failed.
func RunSoak(ctx context.Context, cfg SoakConfig) (*SoakResults, error) {
	cfg = cfg.withDefaults()
	res := &SoakResults{Seed: cfg.Seed, Config: cfg, Started: time.Now(), CPUs: runtime.NumCPU()}
	defer func() { res.Duration = time.Since(res.Started).Round(time.Second).String() }()
	work := cfg.WorkDir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "convoy-soak-"); err != nil {
			return res, err
		}
		if !cfg.KeepWorkDir {
			defer os.RemoveAll(work)
		}
	}
	s := &soakRun{cfg: cfg, res: res, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed)),
		contents: map[string]map[string]soakRev{}, heads: map[string]time.Time{}, firstHeads: map[string]time.Time{}, partition: map[string]string{},
		skip: map[string]bool{}, hosted: map[string]bool{}, labels: map[string]map[string]string{}}
	for _, k := range soakKinds {
		s.addons = append(s.addons, &soakAddon{kind: k, rev: 1})
	}
	if err := s.setUp(ctx, work); err != nil {
		return res, err
	}
	defer func() { _ = s.e.close() }()
	err := s.run(ctx)
	res.Verdicts = s.finalVerdicts(ctx, err)
	return res, err
}

// setUp starts the fleet, copies the binary, commits revision 1 of every add-on, starts the
// controller and installs the add-ons.
func (s *soakRun) setUp(ctx context.Context, work string) error {
	s.exe = filepath.Join(work, "convoy-soak")
	if err := copyExecutable(s.cfg.ConvoyBinary, s.exe); err != nil {
		return err
	}
	bcfg := Config{ConvoyBinary: s.exe, WorkDir: work, KeepWorkDir: s.cfg.KeepWorkDir || s.cfg.WorkDir != "", Log: s.cfg.Log,
		Concurrency: s.cfg.Concurrency}
	s.logf("soak: seed %d; starting the management server and %d HostedClusters (%d with an API server)",
		s.cfg.Seed, s.cfg.Clusters, s.cfg.HostedClusters)
	var err error
	if s.e, err = newEnv(ctx, bcfg, envInput{}); err != nil {
		return err
	}
	if s.cfg.ControllerVerbosity > 0 {
		s.e.ctrlArgs = append(s.e.ctrlArgs, fmt.Sprintf("--v=%d", s.cfg.ControllerVerbosity))
	}
	if err := s.addClusters(ctx, s.cfg.Clusters, s.cfg.HostedClusters); err != nil {
		return err
	}
	if err := s.commit(ctx, "soak: revision 1", s.addons...); err != nil {
		return err
	}
	if err := s.e.startController(ctx); err != nil {
		return err
	}
	for _, a := range s.addons {
		if err := s.e.admin.Create(ctx, s.hostedClusterPackage(a)); err != nil {
			return fmt.Errorf("creating HostedClusterPackage %s: %w", a.name(), err)
		}
	}
	s.logf("soak: installing the five add-ons")
	return s.waitSettled(ctx, rolloutTimeout)
}

// hostedClusterPackage is add-on a's HostedClusterPackage: a rolling upgrade of 10% over the
// three partitions, with a small revision history.
func (s *soakRun) hostedClusterPackage(a *soakAddon) *convoyv1alpha1.HostedClusterPackage {
	selector := map[string]string{"bench.convoy.dev/fleet": "true"}
	if a.kind == soakHosted {
		selector = map[string]string{hostedSampleLabel: "true"}
	}
	mu := intstr.FromString("10%")
	return &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: a.name()},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			HostedClusterSelector: &metav1.LabelSelector{MatchLabels: selector},
			Partition: &convoyv1alpha1.PartitionSpec{LabelKey: soakPartitionKey,
				Order: convoyv1alpha1.PartitionOrder{Static: soakPartitions}},
			Strategy: convoyv1alpha1.HostedClusterPackageStrategy{RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{
				MaxUnavailable: &mu}},
			RevisionHistoryLimit: ptr(int32(soakHistoryLimit)),
			Template:             convoyv1alpha1.PackageTemplate{Spec: packageTemplate(a.path())},
		},
	}
}

// addClusters adds n HostedClusters, the first withServer of them with a hosted API server,
// spread over the partitions.
func (s *soakRun) addClusters(ctx context.Context, n, withServer int) error {
	var inputs []simfleet.HostedClusterInput
	for i := range n {
		labels := map[string]string{"bench.convoy.dev/fleet": "true", soakPartitionKey: soakPartitions[s.nextCluster%3]}
		if i < withServer {
			labels[hostedSampleLabel] = "true"
		}
		inputs = append(inputs, simfleet.HostedClusterInput{Name: fmt.Sprintf("hc-%04d", s.nextCluster), Labels: labels,
			WithoutAPIServer: i >= withServer})
		s.nextCluster++
	}
	for start := 0; start < len(inputs); start += 100 {
		hcs, err := s.e.fleet.AddHostedClusters(ctx, inputs[start:min(start+100, len(inputs))]...)
		if err != nil {
			return err
		}
		s.mu.Lock()
		for i, hc := range hcs {
			labels := inputs[start+i].Labels
			s.live = append(s.live, hc)
			s.e.namespaces[hc.HCPNamespace] = true
			s.labels[hc.HCPNamespace] = labels
			s.partition[hc.HCPNamespace] = labels[soakPartitionKey]
			s.hosted[hc.HCPNamespace] = hc.Config != nil
		}
		s.mu.Unlock()
	}
	return nil
}

// commit commits the add-ons' current revisions as one commit, asks for a poll, and records
// what the commit holds.
func (s *soakRun) commit(ctx context.Context, msg string, addons ...*soakAddon) error {
	files := map[string]string{}
	for _, a := range addons {
		f, err := a.files()
		if err != nil {
			return err
		}
		for k, v := range f {
			files[k] = v
		}
	}
	commit, err := s.e.repo.Commit("main", msg, files)
	if err != nil {
		return err
	}
	s.setHead(commit)
	return s.e.requestPoll(ctx)
}

// setHead records commit as the head, holding the add-ons' current revisions.
func (s *soakRun) setHead(commit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	revs := map[string]soakRev{}
	for _, a := range s.addons {
		revs[a.name()] = soakRev{Rev: a.rev, Broken: a.broken}
	}
	if _, known := s.contents[commit]; !known {
		s.contents[commit] = revs
	}
	s.previousHead, s.head = s.head, commit
	s.heads[commit] = time.Now()
	if _, ok := s.firstHeads[commit]; !ok {
		s.firstHeads[commit] = s.heads[commit]
	}
	s.res.Commits++
}

// logf writes a progress line.
func (s *soakRun) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
}

// copyExecutable copies the binary at from to to, executable.
func copyExecutable(from, to string) error {
	raw, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("reading the convoy binary: %w", err)
	}
	return os.WriteFile(to, raw, 0o755)
}
