package devdemo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// PartitionLabel is the label HyperShift fleets commonly use for risk groups.
const PartitionLabel = "hypershift.openshift.io/risk-group"

// Partitions are the risk groups simulated clusters are spread over, in order.
var Partitions = []string{"early", "normal", "late"}

// Options configure a demo.
type Options struct {
	// Clusters is the number of simulated hosted clusters, at least 1.
	Clusters int
	// Kubeconfig is where the management cluster's kubeconfig is written; controller.log goes
	// next to it.
	Kubeconfig string
	// Binaries holds kube-apiserver and etcd; default: simfleet.FindBinaryDir.
	Binaries string
	// Examples is the examples folder; default: examples/ of the repository around the working
	// directory.
	Examples string
	// ExitAfterRollout ends the demo with a summary once the second revision reached every
	// cluster; meanwhile the demo gives the approvals the rollouts wait for itself, with Approve.
	ExitAfterRollout bool
	// AsServiceAccount runs the controller as its ServiceAccount, with only the RBAC of
	// deploy/rbac, by impersonation.
	AsServiceAccount bool
	// Sectors, when at least 2, runs the sectors demo instead: that many management clusters,
	// one per sector of SectorNames, each with Clusters hosted clusters and its own controller,
	// and a commit promoted from each sector to the next.
	Sectors int
	// Refresh is how often the rollout's progress is read; default 250ms.
	Refresh time.Duration
	// RunController runs convoy's controllers against cfg, with more flags args, keeping Git
	// under storagePath and writing their log to log, until ctx is done (required: the command
	// owns the wiring).
	RunController func(ctx context.Context, cfg *rest.Config, storagePath string, log io.Writer, args ...string) error
	// Approve approves partition of the HostedClusterPackage hcpkg at its update revision as
	// `convoy approve` does, against the cluster of kubeconfig, and writes what it approved to
	// out (required under ExitAfterRollout).
	Approve func(ctx context.Context, kubeconfig, hcpkg, partition string, out io.Writer) error
	// PrintSectors prints the promotion records of key on the repository of url as `convoy
	// sectors` does, at the end of the sectors demo; nil prints nothing.
	PrintSectors func(ctx context.Context, url, key string, out io.Writer) error
}

// Run runs the demo, writing its progress to out, until ctx is done or, under exitAfterRollout, until the second rollout
// completed. It stops every process it started before returning.
func Run(ctx context.Context, out io.Writer, opts Options) error {
	if err := opts.complete(); err != nil {
		return err
	}
	if opts.Sectors > 0 {
		return ignoreCanceled(ctx, runSectors(ctx, out, opts))
	}
	fmt.Fprintln(out, "Starting the management cluster...")
	f, err := simfleet.Start(ctx, simfleet.Options{BinaryDir: opts.Binaries})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "Stopping the API servers...")
		if err := f.Stop(); err != nil {
			fmt.Fprintln(out, "stopping:", err)
		}
	}()
	fmt.Fprintf(out, "Starting %d hosted clusters...\n", opts.Clusters)
	if _, err := f.AddHostedClusters(ctx, devClusters(opts.Clusters)...); err != nil {
		return ignoreCanceled(ctx, err)
	}
	if err := writeKubeconfig(f, opts.Kubeconfig); err != nil {
		return err
	}
	printDevUsage(out, opts)
	d := &demo{out: out, fleet: f, opts: opts, start: time.Now()}
	return ignoreCanceled(ctx, d.run(ctx))
}

// complete checks the options and fills in their defaults. The kubeconfig becomes absolute, so
// that the commands the demo prints work from any folder.
func (o *Options) complete() error {
	if o.Clusters < 1 {
		return fmt.Errorf("--clusters must be at least 1, got %d", o.Clusters)
	}
	if o.Sectors != 0 && (o.Sectors < 2 || o.Sectors > len(SectorNames)) {
		return fmt.Errorf("--sectors must be from 2 to %d, got %d", len(SectorNames), o.Sectors)
	}
	if o.Sectors > 0 && o.AsServiceAccount {
		return errors.New("--sectors and --as-service-account do not go together")
	}
	if o.Refresh <= 0 {
		o.Refresh = 250 * time.Millisecond
	}
	if o.RunController == nil {
		return errors.New("no controller to run")
	}
	if o.ExitAfterRollout && o.Approve == nil {
		return errors.New("no way to approve a partition: exitAfterRollout needs Approve")
	}
	kubeconfig, err := filepath.Abs(o.Kubeconfig)
	if err != nil {
		return err
	}
	o.Kubeconfig = kubeconfig
	o.Examples, err = examplesDir(o.Examples)
	return err
}

// ignoreCanceled returns nil for an error that only says ctx ended: Ctrl-C is a normal exit.
func ignoreCanceled(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return err
}

// devClusters spreads n hosted clusters over the partitions, earliest first.
func devClusters(n int) []simfleet.HostedClusterInput {
	inputs := make([]simfleet.HostedClusterInput, n)
	for i := range inputs {
		partition := Partitions[i*len(Partitions)/n]
		inputs[i] = simfleet.HostedClusterInput{
			Name:   fmt.Sprintf("%s-%d", partition, i+1),
			Labels: map[string]string{PartitionLabel: partition},
		}
	}
	return inputs
}

// examplesDir returns dir, or the examples/ folder of the repository around the working
// directory.
func examplesDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	root, err := simfleet.RepositoryRoot()
	if err != nil {
		return "", fmt.Errorf("finding examples/: run from the repository or pass --examples: %w", err)
	}
	return filepath.Join(root, "examples"), nil
}

func writeKubeconfig(f *simfleet.Fleet, path string) error {
	raw, err := f.KubeConfig()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o600)
}

func printDevUsage(out io.Writer, opts Options) {
	fmt.Fprintf(out, `
The management cluster is up with %d simulated hosted clusters. Look around with:

  export KUBECONFIG=%s
  kubectl get hostedclusters -A -L %s
  kubectl get gitsources,packages -A
  convoy status --watch

`, opts.Clusters, opts.Kubeconfig, PartitionLabel)
}
