package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/convoy-gitops/convoy/internal/devdemo"
	"github.com/convoy-gitops/convoy/rollout/rolloutcontroller"
	"github.com/convoy-gitops/convoy/sources"
)

func newDevCmd() *cobra.Command {
	opts := devdemo.Options{Refresh: 250 * time.Millisecond}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local management cluster with simulated hosted clusters and a live rollout",
		Long: "dev starts an embedded control plane (kube-apiserver and etcd built by `make tools`) " +
			"with HyperShift's and convoy's CRDs, simulated hosted clusters spread over the " +
			"partitions early, normal and late, each with its own API server, a local Git repository " +
			"seeded from examples/packages, the GitSource and HostedClusterPackage of examples/, and " +
			"the controller. It shows the first rollout, commits a new version of the package and " +
			"shows it move partition by partition, then runs until interrupted.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDev(ctx, cmd.OutOrStdout(), opts)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&opts.Clusters, "clusters", 6, "number of simulated hosted clusters")
	fs.StringVar(&opts.Kubeconfig, "kubeconfig-out", filepath.Join(os.TempDir(), "convoy-dev", "kubeconfig"),
		"where to write the management cluster's kubeconfig")
	fs.StringVar(&opts.Binaries, "binaries", "", "folder holding kube-apiserver and etcd (default: ./bin)")
	fs.StringVar(&opts.Examples, "examples", "", "the examples folder (default: examples/ of the repository around the working directory)")
	fs.BoolVar(&opts.ExitAfterRollout, "exit-after-rollout", false, "exit with a summary once the second revision reached every cluster")
	fs.BoolVar(&opts.AsServiceAccount, "as-service-account", false,
		"run the controller as its ServiceAccount, with only the RBAC of deploy/rbac")
	return cmd
}

// runDev runs convoy dev with the controller of this binary.
func runDev(ctx context.Context, out io.Writer, opts devdemo.Options) error {
	opts.RunController = runDevController
	return devdemo.Run(ctx, out, opts)
}

// runDevController runs the controllers as `convoy controller` would, with devControllerOptions.
func runDevController(ctx context.Context, cfg *rest.Config, storagePath string) error {
	opts, err := devControllerOptions(storagePath)
	if err != nil {
		return err
	}
	return runController(ctx, cfg, opts)
}

// devControllerOptions are the controller's defaults, with no metrics, probe or webhook
// listeners (several demos may run on one machine), no leader election, quick probes, and no
// check that controller names are unique in the process (the tests run several demos in one).
func devControllerOptions(storage string) (controllerOptions, error) {
	opts := controllerOptions{metricsAddr: "0", probeAddr: "0", leaseDuration: 15 * time.Second, skipNameValidation: true}
	fs := pflag.NewFlagSet("dev-controller", pflag.ContinueOnError)
	opts.sources.BindFlags(fs)
	opts.sync.BindFlags(fs)
	// The demo repository is a local file:// one.
	err := fs.Parse([]string{"--storage-path=" + storage, "--webhook-addr=", "--probe-interval=1s", sources.AllowFileURLsFlag})
	opts.sync.Concurrency = 4
	opts.rollout = rolloutcontroller.SetupOptions{Concurrency: 1, ApplyConcurrency: rolloutcontroller.DefaultApplyConcurrency,
		CRDPollInterval: rolloutcontroller.DefaultCRDPollInterval}
	return opts, err
}
