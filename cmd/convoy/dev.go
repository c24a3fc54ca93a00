package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/convoy-gitops/convoy/test/fleet"
)

// partitionLabel is the label HyperShift fleets commonly use for risk groups.
const partitionLabel = "hypershift.openshift.io/risk-group"

// devPartitions are the risk groups simulated clusters are spread over, in order.
var devPartitions = []string{"early", "normal", "late"}

type devOptions struct {
	clusters   int
	kubeconfig string
	binaries   string
}

func newDevCmd() *cobra.Command {
	opts := devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local management cluster with simulated hosted clusters",
		Long: "dev starts an embedded control plane (kube-apiserver and etcd built by `make tools`) " +
			"with HyperShift's and convoy's CRDs, and simulated hosted clusters spread over the " +
			"partitions early, normal and late, each with its own API server. It runs until interrupted.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDev(ctx, cmd.OutOrStdout(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.clusters, "clusters", 3, "number of simulated hosted clusters")
	cmd.Flags().StringVar(&opts.kubeconfig, "kubeconfig-out", filepath.Join(os.TempDir(), "convoy-dev", "kubeconfig"),
		"where to write the management cluster's kubeconfig")
	cmd.Flags().StringVar(&opts.binaries, "binaries", "", "folder holding kube-apiserver and etcd (default: ./bin)")
	return cmd
}

func runDev(ctx context.Context, out io.Writer, opts devOptions) error {
	if opts.clusters < 1 {
		return fmt.Errorf("--clusters must be at least 1, got %d", opts.clusters)
	}
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
		return err
	}
	if err := writeKubeconfig(f, opts.kubeconfig); err != nil {
		return err
	}
	printDevUsage(out, opts)
	<-ctx.Done()
	return nil
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
The management cluster is up with %d simulated hosted clusters.

  export KUBECONFIG=%s
  kubectl get hostedclusters -A -L %s
  kubectl get crds | grep convoy.dev

Press Ctrl-C to stop.
`, opts.clusters, opts.kubeconfig, partitionLabel)
}
