package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// Names of the benchmark's own objects on the management cluster.
const (
	benchNamespace = "convoy-bench"
	gitSourceName  = "addons"
	repoName       = "addons"
	// gitSourceInterval is long enough that only requestedAt polls happen in a measurement,
	// yet a steady-state window of a minute or more sees periodic no-op polls.
	gitSourceInterval = 30 * time.Second
)

// env is a management API server with a fleet of HostedClusters, a Git repository of the
// benchmark packages and the controller process.
type env struct {
	cfg     Config
	dir     string
	fleet   *simfleet.Fleet
	admin   client.WithWatch
	counter *countingTransport
	git     *gitserver.Server
	repo    *gitserver.Repo
	// rev and commit are the last committed revision of the packages; previous is the commit
	// before it.
	rev      int
	commit   string
	previous string
	// packageInterval is the spec.interval of the Packages the drivers make; zero leaves it unset.
	packageInterval time.Duration
	// clusters and namespaces are the HostedClusters and their HCP namespaces.
	clusters   []*simfleet.HostedCluster
	namespaces map[string]bool
	// objects is the size of the management package (envInput.Objects).
	objects int
	// sample are the HCP namespaces of the HostedClusters of envInput.APIServerSample.
	sample []string
	ctrl   *Controller
	watch  *packageWatch
	// stopWatch stops watch; nil while no watch started by startController runs.
	stopWatch context.CancelFunc
	// restarts counts the controller's restarts.
	restarts int
	// ctrlArgs are more flags of every controller started.
	ctrlArgs []string
	// settleTimeout bounds the wait for a fault's rollout to settle; zero means rolloutTimeout.
	settleTimeout time.Duration
}

// envInput says what to start.
type envInput struct {
	// Clusters is the number of HostedClusters.
	Clusters int
	// APIServers gives each HostedCluster its own hosted API server.
	APIServers bool
	// APIServerSample gives the first APIServerSample HostedClusters a hosted API server and
	// the label hostedSampleLabel.
	APIServerSample int
	// PackageInterval, when set, is the spec.interval of the Packages the drivers make.
	PackageInterval time.Duration
	// Objects is the size of the management package; default objectsPerPackage.
	Objects int
}

// newEnv starts the management server, the HostedClusters, the Git server with revision 1
// and the GitSource; not the controller (see startController).
func newEnv(ctx context.Context, cfg Config, in envInput) (*env, error) {
	dir, err := os.MkdirTemp(cfg.WorkDir, "env-")
	if err != nil {
		return nil, err
	}
	e := &env{cfg: cfg, dir: dir, namespaces: map[string]bool{}, packageInterval: in.PackageInterval,
		objects: in.Objects}
	if e.objects == 0 {
		e.objects = objectsPerPackage
	}
	if e.fleet, err = simfleet.Start(ctx, simfleet.Options{ClientQPS: 1000, ClientBurst: 2000}); err != nil {
		return nil, err
	}
	steps := []func(context.Context) error{e.connect, e.installCRD, e.startGit, e.createGitSource}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			_ = e.close()
			return nil, err
		}
	}
	if err := e.addClusters(ctx, in); err != nil {
		_ = e.close()
		return nil, err
	}
	return e, nil
}

// connect builds the counted client the benchmark observes and drives with.
func (e *env) connect(ctx context.Context) error {
	var cfg *rest.Config
	cfg, e.counter = countRequests(e.fleet.Config)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: e.fleet.Scheme})
	if err != nil {
		return err
	}
	e.admin = c
	return nil
}

func (e *env) installCRD(ctx context.Context) error { return installWidgetCRD(ctx, e.admin) }

// startGit serves a repository holding revision 1 of the packages over HTTP.
func (e *env) startGit(context.Context) error {
	var err error
	if e.git, err = gitserver.New(filepath.Join(e.dir, "git")); err != nil {
		return err
	}
	if _, err = e.git.StartHTTP(); err != nil {
		return err
	}
	if e.repo, err = e.git.CreateRepo(repoName); err != nil {
		return err
	}
	_, err = e.commitNext()
	return err
}

// commitNext commits the next revision of the packages and returns its commit.
func (e *env) commitNext() (string, error) {
	files, err := packageFiles(e.rev+1, e.objects)
	if err != nil {
		return "", err
	}
	commit, err := e.repo.Commit("main", fmt.Sprintf("revision %d", e.rev+1), files)
	if err != nil {
		return "", err
	}
	e.rev, e.commit, e.previous = e.rev+1, commit, e.commit
	return commit, nil
}

// createGitSource creates the namespace of the benchmark and the GitSource every Package uses.
func (e *env) createGitSource(ctx context.Context) error {
	if err := e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}); err != nil {
		return err
	}
	return e.admin.Create(ctx, &convoyv1alpha1.GitSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: gitSourceName},
		Spec: convoyv1alpha1.GitSourceSpec{URL: e.git.HTTPURL(repoName), Ref: convoyv1alpha1.GitRef{Branch: "main"},
			Interval: &metav1.Duration{Duration: gitSourceInterval},
			// The package drivers create Packages in every HCP namespace.
			AccessFrom: &convoyv1alpha1.AccessFrom{NamespaceSelectors: []metav1.LabelSelector{{}}}},
	})
}

// addClusters creates the HostedClusters in batches, so that a thousand do not start at once.
func (e *env) addClusters(ctx context.Context, in envInput) error {
	const batch = 100
	for start := 0; start < in.Clusters; start += batch {
		var inputs []simfleet.HostedClusterInput
		for i := start; i < min(start+batch, in.Clusters); i++ {
			labels := map[string]string{"bench.convoy.dev/fleet": "true"}
			withServer := in.APIServers || i < in.APIServerSample
			if i < in.APIServerSample {
				labels[hostedSampleLabel] = "true"
			}
			inputs = append(inputs, simfleet.HostedClusterInput{Name: fmt.Sprintf("hc-%04d", i),
				Labels: labels, WithoutAPIServer: !withServer})
		}
		hcs, err := e.fleet.AddHostedClusters(ctx, inputs...)
		if err != nil {
			return err
		}
		for _, hc := range hcs {
			e.clusters = append(e.clusters, hc)
			e.namespaces[hc.HCPNamespace] = true
			if hc.Config != nil && !in.APIServers {
				e.sample = append(e.sample, hc.HCPNamespace)
			}
		}
	}
	return nil
}

// startController writes the kubeconfig, starts the controller process and the Package watch.
func (e *env) startController(ctx context.Context) error {
	raw, err := e.fleet.KubeConfig()
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(e.dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, raw, 0o600); err != nil {
		return err
	}
	e.ctrl, err = StartController(ctx, e.controllerInput(e.dir, 0))
	if err != nil {
		return err
	}
	// The watch gets its own context, so that stopController can end it before the run does.
	watchCtx, stopWatch := context.WithCancel(ctx)
	if e.watch, err = watchPackages(watchCtx, e.admin); err != nil {
		stopWatch()
		return err
	}
	e.stopWatch = stopWatch
	return nil
}

// stopController stops the controller and the Package watch of startController, and forgets
// both: take then measures no controller, and nothing stops them twice or reads a watch that
// no longer follows the API server.
func (e *env) stopController() error {
	if e.stopWatch != nil {
		e.stopWatch()
	}
	e.stopWatch, e.watch = nil, nil
	if e.ctrl == nil {
		return nil
	}
	err := e.ctrl.Stop()
	e.ctrl = nil
	return err
}

// restartController starts the controller again after it died, on the same storage.
func (e *env) restartController(ctx context.Context) error {
	e.restarts++
	var err error
	e.ctrl, err = StartController(ctx, e.controllerInput(e.dir, e.restarts))
	return err
}

// controllerInput is how every controller of the run starts: the benchmark's binary, flags and
// memory limit, with its store and log under dir.
func (e *env) controllerInput(dir string, restart int) ControllerInput {
	return ControllerInput{Binary: e.cfg.ConvoyBinary, Kubeconfig: filepath.Join(e.dir, "kubeconfig"), Dir: dir,
		Concurrency: e.cfg.Concurrency, Restart: restart, Args: e.ctrlArgs, MemoryLimit: e.cfg.ControllerMemoryLimit}
}

// requestPoll asks the GitSource to poll now, as the webhook receiver would.
func (e *env) requestPoll(ctx context.Context) error {
	gs := &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: gitSourceName}}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, convoyv1alpha1.RequestedAtAnnotation,
		time.Now().UTC().Format(time.RFC3339Nano))
	return e.admin.Patch(ctx, gs, client.RawPatch("application/merge-patch+json", []byte(patch)))
}

// close stops the controller, the Package watch, the API servers and the Git server.
func (e *env) close() error {
	_ = e.stopController()
	if e.git != nil {
		e.git.Close()
	}
	err := e.fleet.Stop()
	if e.cfg.KeepWorkDir {
		return err
	}
	_ = os.RemoveAll(e.dir)
	return err
}

// snapshot is what is measured at the start and end of a window.
type snapshot struct {
	at    time.Time
	usage Usage
	// serverCPU is the management kube-apiserver's and etcd's CPU time.
	serverCPU time.Duration
	server    Requests
	own       Requests
	gitStats  gitserver.Stats
	// benchCPU is the benchmark process's CPU time, machine the machine's.
	benchCPU time.Duration
	machine  machineCPU
}

// begin starts a measured pass: it compacts the management etcd's history (see
// simfleet.Fleet.CompactStorage), so that every pass, convoy's and the floors' alike, starts
// on a store without the history of the passes before it, then measures.
func (e *env) begin(ctx context.Context) (snapshot, error) {
	if err := e.compact(ctx); err != nil {
		return snapshot{}, err
	}
	return e.take(ctx)
}

// compact discards the management etcd's history before a measured pass that takes no
// snapshot of its own.
func (e *env) compact(ctx context.Context) error {
	if err := e.fleet.CompactStorage(ctx); err != nil {
		return fmt.Errorf("compacting the management etcd before a measured pass: %w", err)
	}
	return nil
}

// take measures now.
func (e *env) take(ctx context.Context) (snapshot, error) {
	s := snapshot{at: time.Now(), own: e.counter.snapshot(), gitStats: e.git.Stats()}
	var err error
	if s.server, err = scrapeRequests(ctx, e.fleet.Config); err != nil {
		return s, err
	}
	if s.serverCPU, err = e.serverCPU(); err != nil {
		return s, err
	}
	if s.benchCPU, err = ownCPU(); err != nil {
		return s, err
	}
	if s.machine, err = readMachineCPU(); err != nil {
		return s, err
	}
	if e.ctrl != nil {
		s.usage, err = e.ctrl.Usage()
	}
	return s, err
}

// window is the difference of two snapshots: what the controller did in between.
type window struct {
	wall time.Duration
	cpu  time.Duration
	// serverCPU is what the management kube-apiserver and etcd spent.
	serverCPU time.Duration
	// peakRSS is the controller's VmHWM at the end of the window.
	peakRSS int64
	// requests are the API server's, minus the benchmark's own.
	requests Requests
	git      gitserver.Stats
	// renders counts the controller's package renders; only rollouts measure it.
	renders float64
	// benchCPU is the benchmark process's CPU time, machine the machine's.
	benchCPU time.Duration
	machine  machineCPU
}

// since returns what happened between before and after.
func since(before, after snapshot) window {
	return window{
		wall:      after.at.Sub(before.at),
		cpu:       after.usage.CPU - before.usage.CPU,
		serverCPU: after.serverCPU - before.serverCPU,
		peakRSS:   after.usage.PeakRSS,
		requests:  after.server.Sub(before.server).Sub(after.own.Sub(before.own)),
		git:       after.gitStats.Sub(before.gitStats),
		benchCPU:  after.benchCPU - before.benchCPU,
		machine:   after.machine.sub(before.machine),
	}
}

// serverCPU returns the CPU time of the management kube-apiserver and etcd so far.
func (e *env) serverCPU() (time.Duration, error) {
	var sum time.Duration
	for _, pid := range e.fleet.ServerPIDs() {
		cpu, err := cpuTime(pid)
		if err != nil {
			return 0, err
		}
		sum += cpu
	}
	return sum, nil
}
