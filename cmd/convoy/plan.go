package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

// planOptions are the flags of `convoy plan`.
type planOptions struct {
	kubeconfig string
	revision   string
	output     string
	now        func() time.Time
}

func newPlanCmd() *cobra.Command {
	opts := planOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "plan NAME",
		Short: "Show in which order a revision would reach the HostedClusters",
		Long: "plan changes nothing. It replays the rollout planner on the HostedClusterPackage NAME " +
			"and the fleet as they are, assuming every updated Package becomes available at once, and " +
			"lists the batches in which the update revision (or --revision) would reach the " +
			"HostedClusters, partition by partition under the maxUnavailable budget, and the " +
			"HostedClusters the rollout skips and why. When gates hold the rollout, it says when each " +
			"partition can start at the earliest: after the previous partition's soak, inside the " +
			"rollout's windows, once the previous partition's checks passed (the forecast assumes every " +
			"check passes once its duration is over), and for a partition that requires an approval, " +
			"once approved (the forecast assumes the approval given when asked for and prints the " +
			"command that gives it); for a partition with checks, it says when they pass at the earliest. " +
			"Under spec.promotion, while the GitSource's newest commit waits for the upstream sectors, it says " +
			"what each did with it and when it can enter this sector: once every upstream sector completed it, " +
			"at the latest of their completions plus their soaks.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newCLIClient(opts.kubeconfig)
			if err != nil {
				return err
			}
			return runPlan(cmd.Context(), c, cmd.OutOrStdout(), args[0], opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "Kubeconfig of the management cluster (default: $KUBECONFIG, in-cluster, then ~/.kube/config).")
	fs.StringVar(&opts.revision, "revision", "", "Git commit (40 hex characters) to plan instead of the update revision.")
	fs.StringVarP(&opts.output, "output", "o", "text", "Output format: text, markdown (for a pull request comment), json or yaml.")
	return cmd
}

// runPlan prints the forecast of the HostedClusterPackage name.
func runPlan(ctx context.Context, c client.Reader, out io.Writer, name string, opts planOptions) error {
	snap, err := fleetview.Read(ctx, c, name)
	if err != nil {
		return err
	}
	f, err := fleetview.NewForecast(snap, fleetview.ForecastOptions{Revision: opts.revision, Now: opts.now()})
	if err != nil {
		return err
	}
	switch opts.output {
	case "text":
		return f.WriteText(out)
	case "markdown":
		return f.WriteMarkdown(out)
	default:
		return writeStructured(out, opts.output, f)
	}
}
