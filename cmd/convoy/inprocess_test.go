package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/convoy-gitops/convoy/rollout/rolloutcontroller"
	"github.com/convoy-gitops/convoy/sources"
)

// devControllerOptions are the controller's defaults for a test that runs it in its own process:
// no metrics, probe or webhook listeners, no leader election, quick probes, file:// Git, and no
// check that controller names are unique in the process (a test may run the controllers twice).
func devControllerOptions(storage string) (controllerOptions, error) {
	opts := controllerOptions{metricsAddr: "0", probeAddr: "0", leaseDuration: 15 * time.Second, skipNameValidation: true}
	fs := pflag.NewFlagSet("dev-controller", pflag.ContinueOnError)
	opts.sources.BindFlags(fs)
	opts.sync.BindFlags(fs)
	err := fs.Parse([]string{"--storage-path=" + storage, "--webhook-addr=", "--probe-interval=1s", sources.AllowFileURLsFlag})
	opts.sync.Concurrency = 4
	opts.rollout = rolloutcontroller.SetupOptions{Concurrency: 1, ApplyConcurrency: rolloutcontroller.DefaultApplyConcurrency,
		CRDPollInterval: rolloutcontroller.DefaultCRDPollInterval}
	return opts, err
}

// inProcessController is a devdemo.Options.RunController that runs the controllers in the
// test's process with devControllerOptions, changed by adjust, logging to log.
func inProcessController(adjust func(*controllerOptions)) func(context.Context, *rest.Config, string, io.Writer, ...string) error {
	return func(ctx context.Context, cfg *rest.Config, storage string, log io.Writer, _ ...string) error {
		ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(log))))
		opts, err := devControllerOptions(storage)
		if err != nil {
			return err
		}
		adjust(&opts)
		return runController(ctx, cfg, opts)
	}
}

// inProcessApprove is a devdemo.Options.Approve that runs `convoy approve` in the test's
// process.
func inProcessApprove(ctx context.Context, kubeconfig, hcpkg, partition string, out io.Writer) error {
	c, err := newCLIClient(kubeconfig)
	if err != nil {
		return err
	}
	return runApprove(ctx, c, out, hcpkg, approveOptions{kubeconfig: kubeconfig, partition: partition})
}
