package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

// statusOptions are the flags of `convoy status`.
type statusOptions struct {
	kubeconfig string
	output     string
	watch      bool
	interval   time.Duration
	terminal   bool
	// now is the clock waits are measured against ("until 12:03 (in 3m)"); nil prints absolute
	// times only.
	now func() time.Time
}

func newStatusCmd() *cobra.Command {
	opts := statusOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show the rollout progress of HostedClusterPackages",
		Long: "status prints, per HostedClusterPackage, the revisions (current → update), what holds " +
			"the rollout (a soak, checks, an approval, a window, failures) and until when, a progress bar " +
			"and state per partition (with the command that approves a partition awaiting approval), " +
			"each partition's checks (state, passed and failed evaluations, the value and message of the " +
			"last one), the package counts, the conditions and the failures. With --watch it redraws in place on a " +
			"terminal and prints one line per change otherwise.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newCLIClient(opts.kubeconfig)
			if err != nil {
				return err
			}
			opts.terminal = isTerminal(cmd.OutOrStdout())
			return runStatus(cmd.Context(), c, cmd.OutOrStdout(), firstArg(args), opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "Kubeconfig of the management cluster (default: $KUBECONFIG, in-cluster, then ~/.kube/config).")
	fs.StringVarP(&opts.output, "output", "o", "text", "Output format: text, json or yaml.")
	fs.BoolVarP(&opts.watch, "watch", "w", false, "Keep watching until interrupted.")
	fs.DurationVar(&opts.interval, "interval", 2*time.Second, "How often --watch reads the status.")
	return cmd
}

// runStatus prints the status of the HostedClusterPackage name, or of all of them.
func runStatus(ctx context.Context, c client.Reader, out io.Writer, name string, opts statusOptions) error {
	if opts.watch {
		if opts.output != "text" {
			return fmt.Errorf("--watch prints text only, not %q", opts.output)
		}
		return fleetview.Watch(ctx, c, out, fleetview.WatchOptions{Name: name, Interval: opts.interval, Terminal: opts.terminal, Now: opts.now})
	}
	snaps, err := fleetview.ReadStatus(ctx, c, name)
	if err != nil {
		return err
	}
	reports := make([]fleetview.Report, 0, len(snaps))
	for _, s := range snaps {
		r := fleetview.NewReport(s)
		if opts.now != nil {
			r.Now = opts.now()
		}
		reports = append(reports, r)
	}
	if opts.output != "text" {
		var v any = reports
		if name != "" {
			v = reports[0]
		}
		return writeStructured(out, opts.output, v)
	}
	if len(reports) == 0 {
		_, err := fmt.Fprintln(out, "No HostedClusterPackages found.")
		return err
	}
	for i := range reports {
		if i > 0 {
			fmt.Fprintln(out)
		}
		if err := reports[i].WriteText(out); err != nil {
			return err
		}
	}
	return nil
}

// writeStructured prints v as JSON or YAML.
func writeStructured(out io.Writer, format string, v any) error {
	var raw []byte
	var err error
	switch format {
	case "json":
		raw, err = json.MarshalIndent(v, "", "  ")
		raw = append(raw, '\n')
	case "yaml":
		raw, err = yaml.Marshal(v)
	default:
		return fmt.Errorf("unknown output format %q: use text, json or yaml", format)
	}
	if err != nil {
		return err
	}
	_, err = out.Write(raw)
	return err
}

// newCLIScheme returns the kinds status and plan read.
func newCLIScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(convoyv1alpha1.AddToScheme(s))
	utilruntime.Must(hyperv1.AddToScheme(s))
	return s
}

// newCLIClient builds an uncached client of the management cluster.
func newCLIClient(kubeconfig string) (client.Client, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: newCLIScheme()})
}

// isTerminal reports whether out is a terminal.
func isTerminal(out io.Writer) bool {
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// firstArg returns args[0], or "" when there is none.
func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
