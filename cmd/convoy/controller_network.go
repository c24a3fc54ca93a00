package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/convoy-gitops/convoy/internal/dialpolicy"
	"github.com/convoy-gitops/convoy/rollout/checks"
)

// networkOptions say where the requests a spec chooses may go: the rollout checks', the Helm
// chart fetches' and the commit statuses'.
type networkOptions struct {
	// allowLinkLocal lets checks, chart fetches and commit statuses reach link-local and
	// metadata addresses.
	allowLinkLocal bool
	// checkAllowInsecureHTTP lets checks send their Secret's credentials over http://, apart
	// from Git's and the commit statuses' flags: allowing one must not allow the others.
	checkAllowInsecureHTTP bool
}

func (o *networkOptions) bindFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.allowLinkLocal, strings.TrimPrefix(dialpolicy.AllowLinkLocalFlag, "--"), false,
		"Let rollout checks, Helm chart fetches and commit statuses (spec.commitStatus.apiURL) connect to link-local addresses (169.254.0.0/16, fe80::/10) and cloud metadata endpoints (fd00:ec2::254, 100.100.100.200), which hand out the node's cloud credentials.")
	fs.BoolVar(&o.checkAllowInsecureHTTP, strings.TrimPrefix(checks.InsecureHTTPFlag, "--"), false,
		"Let a rollout check send its secretRef credentials over http://, in clear (Git's --allow-insecure-http does not).")
}

// apply sets the options on the controllers' options.
func (o networkOptions) apply(opts *controllerOptions) {
	policy := dialpolicy.Policy{AllowLinkLocal: o.allowLinkLocal}
	opts.sync.ChartNetwork = policy
	opts.rollout.Checks.Network = policy
	opts.commitStatus.network = policy
	opts.rollout.Checks.AllowInsecureHTTP = o.checkAllowInsecureHTTP
}
