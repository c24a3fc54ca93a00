package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/convoy-gitops/convoy/internal/dialpolicy"
	"github.com/convoy-gitops/convoy/rollout/commitstatus"
)

// commitStatusOptions tune the commit status Reporter (GitSource spec.commitStatus).
type commitStatusOptions struct {
	interval, timeout, maxBackoff time.Duration
	// readTTL is how long a commit's statuses, read for promotion, are served again.
	readTTL time.Duration
	// allowInsecureHTTP lets tokens go over http://, apart from --allow-insecure-http of Git:
	// allowing a forge without TLS for Git must not let every GitSource's status POSTs do so.
	allowInsecureHTTP bool
	// network says which addresses API URLs may be reached at (networkOptions sets it).
	network dialpolicy.Policy
}

func (o *commitStatusOptions) bindFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.interval, "commit-status-interval", commitstatus.DefaultInterval,
		"Least time between two commit status requests to the forges.")
	fs.DurationVar(&o.timeout, "commit-status-timeout", commitstatus.DefaultTimeout,
		"Timeout of one commit status request.")
	fs.DurationVar(&o.maxBackoff, "commit-status-max-backoff", commitstatus.DefaultMaxBackoff,
		"Longest wait before a failed commit status request is retried.")
	fs.DurationVar(&o.readTTL, "commit-status-read-interval", commitstatus.DefaultReadTTL,
		"How often the commit statuses of one commit are read again for promotion (spec.promotion.bus CommitStatuses); reads within it are shared.")
	fs.BoolVar(&o.allowInsecureHTTP, "commit-status-allow-insecure-http", false,
		"Allow spec.commitStatus.apiURL over http://, which sends the forge token in clear (Git's --allow-insecure-http does not).")
}

// reporter returns the Reporter.
func (o commitStatusOptions) reporter() *commitstatus.Reporter {
	return &commitstatus.Reporter{Interval: o.interval, Timeout: o.timeout, MaxBackoff: o.maxBackoff,
		ReadTTL: o.readTTL, AllowInsecureHTTP: o.allowInsecureHTTP, Network: o.network}
}
