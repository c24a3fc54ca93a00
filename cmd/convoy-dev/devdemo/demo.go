package devdemo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// Names of the demo.
const (
	devRepository      = "addons"
	devNamespace       = "convoy-system"
	devServiceAccount  = "system:serviceaccount:convoy-system:convoy-controller"
	devReleaseFile     = "extra-component/management/release.yaml"
	devGitSourcePeriod = "10s"
)

// devRelease is the file the demo's second commit adds to the package, as a merged pull request
// would: a ConfigMap in the HCP namespace that names the release.
const devRelease = `# Phase deploy: the release of the component, added by convoy-dev's second commit.
apiVersion: v1
kind: ConfigMap
metadata:
  name: extra-component-release
  annotations:
    convoy.dev/phase: deploy
data:
  release: "2"
`

// demo is one run of `convoy-dev` once the fleet is up.
type demo struct {
	out   io.Writer
	fleet *simfleet.Fleet
	opts  Options
	start time.Time
	// hcpkg and gitSource name the example objects.
	hcpkg     string
	gitSource client.ObjectKey
	// order records in which order the Packages get each commit.
	order *orderRecorder
	// gates remembers the gates the demo explained.
	gates gateNotes
}

// run seeds Git, applies the examples, starts the controller, and follows two rollouts.
func (d *demo) run(ctx context.Context) error {
	// Note: watches and the controller end with this context, before the API servers stop.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, dir, cleanup, err := startGitServer("convoy-dev-git-")
	if err != nil {
		return err
	}
	defer cleanup()
	repo, err := d.seedRepository(srv)
	if err != nil {
		return err
	}
	if err := d.applyExamples(ctx, srv.FileURL(devRepository)); err != nil {
		return err
	}
	if d.order, err = startOrderRecorder(ctx, d.fleet.Config, d.hcpkg); err != nil {
		return err
	}
	stop, err := d.startController(ctx, dir)
	if err != nil {
		return err
	}
	defer stop()
	return d.followRollouts(ctx, repo)
}

// followRollouts shows the first rollout, commits a new version, shows the second one, and
// then waits for Ctrl-C unless exitAfterRollout.
func (d *demo) followRollouts(ctx context.Context, repo *gitserver.Repo) error {
	fmt.Fprintf(d.out, "First rollout of HostedClusterPackage %s:\n", d.hcpkg)
	first, err := d.awaitRollout(ctx, "")
	if err != nil {
		return err
	}
	commit, err := repo.Commit("main", "extra-component: publish the release in a ConfigMap",
		map[string]string{devReleaseFile: devRelease})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\nCommitted %s to main (adds %s); rolling it out:\n", shortCommit(commit), devReleaseFile)
	if err := d.requestPoll(ctx); err != nil {
		return err
	}
	second, err := d.awaitRollout(ctx, first.revision)
	if err != nil {
		return err
	}
	if err := d.printSummary(ctx, second, commit); err != nil {
		return err
	}
	if d.opts.ExitAfterRollout {
		return nil
	}
	fmt.Fprintln(d.out, "\nPress Ctrl-C to stop.")
	<-ctx.Done()
	return nil
}

// startGitServer makes a temporary folder named after prefix and serves Git repositories from
// it; cleanup stops the server and removes the folder, where the demo also keeps the
// controllers' storage.
func startGitServer(prefix string) (srv *gitserver.Server, dir string, cleanup func(), err error) {
	if dir, err = os.MkdirTemp("", prefix); err != nil {
		return nil, "", nil, err
	}
	if srv, err = gitserver.New(dir); err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", nil, err
	}
	return srv, dir, func() { srv.Close(); _ = os.RemoveAll(dir) }, nil
}

// seedRepository creates the demo's repository with examples/packages at its root.
func (d *demo) seedRepository(srv *gitserver.Server) (*gitserver.Repo, error) {
	repo, err := srv.CreateRepo(devRepository)
	if err != nil {
		return nil, err
	}
	files, err := gitserver.ReadTree(filepath.Join(d.opts.Examples, "packages"), "")
	if err != nil {
		return nil, err
	}
	commit, err := repo.Commit("main", "Add the example packages", files)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(d.out, "Seeded %s with examples/packages at commit %s.\n", srv.FileURL(devRepository), shortCommit(commit))
	return repo, nil
}

// applyExamples creates the controller's namespace and applies the GitSource (pointed at url,
// polled often) and the HostedClusterPackage of examples/ with the demo's soak and approval.
func (d *demo) applyExamples(ctx context.Context, url string) error {
	c := d.fleet.Client
	if err := applyObjects(ctx, c, namespaceObject(devNamespace)); err != nil {
		return err
	}
	gs, err := readObjects(filepath.Join(d.opts.Examples, "gitsource.yaml"))
	if err != nil {
		return err
	}
	for _, obj := range gs {
		if err := unstructured.SetNestedField(obj.Object, url, "spec", "url"); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(obj.Object, devGitSourcePeriod, "spec", "interval"); err != nil {
			return err
		}
		d.gitSource = client.ObjectKeyFromObject(obj)
	}
	hcpkg, err := readObjects(filepath.Join(d.opts.Examples, "hostedclusterpackage.yaml"))
	if err != nil {
		return err
	}
	d.hcpkg = hcpkg[0].GetName()
	if err := addDemoGates(hcpkg[0]); err != nil {
		return err
	}
	return applyObjects(ctx, c, append(gs, hcpkg...)...)
}

// startController runs the controllers in this process, logging to controller.log next to the
// kubeconfig, as the ServiceAccount of deploy/ when asServiceAccount; stop ends them and waits.
func (d *demo) startController(ctx context.Context, dir string) (stop func(), err error) {
	cfg, err := d.controllerConfig(ctx)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(filepath.Dir(d.opts.Kubeconfig), "controller.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(d.out, "Starting the controller (logs: %s)...\n\n", logPath)
	ctrlCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.opts.RunController(ctrlCtx, cfg, filepath.Join(dir, "sources"), logFile) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(d.out, "controller:", err)
		}
		_ = logFile.Close()
	}, nil
}

// controllerConfig returns the administrator's config or, when asServiceAccount, applies the
// RBAC of deploy/rbac and returns a config that impersonates the controller's ServiceAccount.
func (d *demo) controllerConfig(ctx context.Context) (*rest.Config, error) {
	cfg := rest.CopyConfig(d.fleet.Config)
	if !d.opts.AsServiceAccount {
		return cfg, nil
	}
	paths, err := filepath.Glob(filepath.Join(filepath.Dir(d.opts.Examples), "deploy", "rbac", "*.yaml"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no deploy/rbac next to %s: %w", d.opts.Examples, err)
	}
	for _, p := range paths {
		objs, err := readObjects(p)
		if err != nil {
			return nil, err
		}
		if err := applyObjects(ctx, d.fleet.Client, objs...); err != nil {
			return nil, err
		}
	}
	fmt.Fprintln(d.out, "The controller runs as", devServiceAccount, "with the RBAC of deploy/rbac.")
	cfg.Impersonate = rest.ImpersonationConfig{UserName: devServiceAccount}
	return cfg, nil
}

// requestPoll asks the GitSource to poll now, as a webhook would.
func (d *demo) requestPoll(ctx context.Context) error {
	gs := &convoyv1alpha1.GitSource{}
	if err := d.fleet.Client.Get(ctx, d.gitSource, gs); err != nil {
		return err
	}
	patch := client.MergeFrom(gs.DeepCopy())
	if gs.Annotations == nil {
		gs.Annotations = map[string]string{}
	}
	gs.Annotations[convoyv1alpha1.RequestedAtAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	return d.fleet.Client.Patch(ctx, gs, patch)
}

// clusterOfNamespace returns the HostedCluster name of an HCP namespace of the demo.
func clusterOfNamespace(ns string) string {
	return strings.TrimPrefix(ns, simfleet.DefaultHostedClusterNamespace+"-")
}
