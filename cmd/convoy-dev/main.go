// Command convoy-dev is convoy's development binary: it starts a local management cluster with
// simulated hosted clusters, runs the convoy binary's controller against it as a process and
// shows a live rollout. It works inside a checkout of convoy (it needs bin/ and examples/); the
// product binary, cmd/convoy, carries none of this simulation.
package main

import (
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/convoy-gitops/convoy/cmd/convoy-dev/devdemo"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		os.Exit(1)
	}
}

// newRootCmd builds convoy-dev's one command.
func newRootCmd() *cobra.Command {
	opts := devdemo.Options{Refresh: 250 * time.Millisecond}
	var convoy string
	cmd := &cobra.Command{
		Use:   "convoy-dev",
		Short: "Run a local management cluster with simulated hosted clusters and a live rollout",
		Long: "convoy-dev starts an embedded control plane (kube-apiserver and etcd built by `make tools`) " +
			"with HyperShift's and convoy's CRDs, simulated hosted clusters spread over the " +
			"partitions early, normal and late, each with its own API server, a local Git repository " +
			"seeded from examples/packages, the GitSource and HostedClusterPackage of examples/, and " +
			"`convoy controller` as a process. The HostedClusterPackage soaks a few seconds after each " +
			"partition but the last and waits for an approval before late: the demo prints the " +
			"`convoy approve` command to type. It shows the first rollout, commits a new version of " +
			"the package and shows it move partition by partition, then runs until interrupted.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			bin, err := convoyBinary(convoy)
			if err != nil {
				return err
			}
			opts.RunController, opts.Approve, opts.PrintSectors = controllerProcess(bin), approveProcess(bin), sectorsProcess(bin)
			return devdemo.Run(ctx, cmd.OutOrStdout(), opts)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&opts.Clusters, "clusters", 6, "Number of simulated hosted clusters.")
	fs.StringVar(&opts.Kubeconfig, "kubeconfig-out", filepath.Join(os.TempDir(), "convoy-dev", "kubeconfig"),
		"Where to write the management cluster's kubeconfig.")
	fs.StringVar(&opts.Binaries, "binaries", "", "Folder holding kube-apiserver and etcd (default: ./bin).")
	fs.StringVar(&opts.Examples, "examples", "", "The examples folder (default: examples/ of the repository around the working directory).")
	fs.StringVar(&convoy, "convoy", "", "The convoy binary whose controller runs (default: convoy next to this binary).")
	fs.BoolVar(&opts.ExitAfterRollout, "exit-after-rollout", false, "Exit with a summary once the second revision reached every cluster, running the approve commands it prints itself.")
	fs.IntVar(&opts.Sectors, "sectors", 0, "Run the sectors demo instead: this many management clusters (2 to 5), "+
		"one per sector (canary, eu, us, ap, sa), each with --clusters hosted clusters and its own controller, "+
		"and a commit promoted from each sector to the next through the Git repository.")
	fs.BoolVar(&opts.AsServiceAccount, "as-service-account", false,
		"Run the controller as its ServiceAccount, with only the RBAC of deploy/rbac.")
	return cmd
}
