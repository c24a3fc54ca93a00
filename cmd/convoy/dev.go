package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/convoy-gitops/convoy/test/fleet"
)

// partitionLabel is the label HyperShift fleets commonly use for risk groups.
const partitionLabel = "hypershift.openshift.io/risk-group"

// devPartitions are the risk groups simulated clusters are spread over, in order.
var devPartitions = []string{"early", "normal", "late"}

// devOptions are the flags of `convoy dev`.
type devOptions struct {
	clusters         int
	kubeconfig       string
	binaries         string
	examples         string
	exitAfterRollout bool
	asServiceAccount bool
	refresh          time.Duration
}

func newDevCmd() *cobra.Command {
	opts := devOptions{refresh: 250 * time.Millisecond}
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
	fs.IntVar(&opts.clusters, "clusters", 6, "number of simulated hosted clusters")
	fs.StringVar(&opts.kubeconfig, "kubeconfig-out", filepath.Join(os.TempDir(), "convoy-dev", "kubeconfig"),
		"where to write the management cluster's kubeconfig")
	fs.StringVar(&opts.binaries, "binaries", "", "folder holding kube-apiserver and etcd (default: ./bin)")
	fs.StringVar(&opts.examples, "examples", "", "the examples folder (default: examples/ of the repository around the working directory)")
	fs.BoolVar(&opts.exitAfterRollout, "exit-after-rollout", false, "exit with a summary once the second revision reached every cluster")
	fs.BoolVar(&opts.asServiceAccount, "as-service-account", false,
		"run the controller as its ServiceAccount, with only the RBAC of deploy/rbac")
	return cmd
}

// runDev runs the demo until ctx is done or, under exitAfterRollout, until the second rollout
// completed. It stops every process it started before returning.
func runDev(ctx context.Context, out io.Writer, opts devOptions) error {
	if opts.clusters < 1 {
		return fmt.Errorf("--clusters must be at least 1, got %d", opts.clusters)
	}
	if opts.refresh <= 0 {
		opts.refresh = 250 * time.Millisecond
	}
	root, err := examplesDir(opts.examples)
	if err != nil {
		return err
	}
	opts.examples = root
	fmt.Fprintln(out, "Starting the management cluster...")
	f, err := fleet.Start(ctx, fleet.Options{BinaryDir: opts.binaries})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "Stopping the API servers...")
		if err := f.Stop(); err != nil {
			fmt.Fprintln(out, "stopping:", err)
		}
	}()
	fmt.Fprintf(out, "Starting %d hosted clusters...\n", opts.clusters)
	if _, err := f.AddHostedClusters(ctx, devClusters(opts.clusters)...); err != nil {
		return ignoreCanceled(ctx, err)
	}
	if err := writeKubeconfig(f, opts.kubeconfig); err != nil {
		return err
	}
	printDevUsage(out, opts)
	d := &demo{out: out, fleet: f, opts: opts, start: time.Now()}
	return ignoreCanceled(ctx, d.run(ctx))
}

// ignoreCanceled returns nil for an error that only says ctx ended: Ctrl-C is a normal exit.
func ignoreCanceled(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return err
}

// devClusters spreads n hosted clusters over the partitions, earliest first.
func devClusters(n int) []fleet.HostedClusterInput {
	inputs := make([]fleet.HostedClusterInput, n)
	for i := range inputs {
		partition := devPartitions[i*len(devPartitions)/n]
		inputs[i] = fleet.HostedClusterInput{
			Name:   fmt.Sprintf("%s-%d", partition, i+1),
			Labels: map[string]string{partitionLabel: partition},
		}
	}
	return inputs
}

// examplesDir returns dir, or the examples/ folder of the first directory above the working
// directory that has one.
func examplesDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		candidate := filepath.Join(d, "examples")
		if _, err := os.Stat(filepath.Join(candidate, "hostedclusterpackage.yaml")); err == nil {
			return candidate, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no examples/ folder above the working directory: run from the repository or pass --examples")
		}
	}
}

func writeKubeconfig(f *fleet.Fleet, path string) error {
	raw, err := f.KubeConfig()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o600)
}

func printDevUsage(out io.Writer, opts devOptions) {
	fmt.Fprintf(out, `
The management cluster is up with %d simulated hosted clusters. Look around with:

  export KUBECONFIG=%s
  kubectl get hostedclusters -A -L %s
  kubectl get gitsources,packages -A
  convoy status --watch

`, opts.clusters, opts.kubeconfig, partitionLabel)
}
