package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/convoy-gitops/convoy/rollout/commitstatus"
)

// commitStatusOptions tune the commit status Reporter (GitSource spec.commitStatus).
type commitStatusOptions struct {
	interval, timeout, maxBackoff time.Duration
}

func (o *commitStatusOptions) bindFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.interval, "commit-status-interval", commitstatus.DefaultInterval,
		"Least time between two commit status requests to the forges.")
	fs.DurationVar(&o.timeout, "commit-status-timeout", commitstatus.DefaultTimeout,
		"Timeout of one commit status request.")
	fs.DurationVar(&o.maxBackoff, "commit-status-max-backoff", commitstatus.DefaultMaxBackoff,
		"Longest wait before a failed commit status request is retried.")
}

// reporter returns the Reporter; allowHTTP (--allow-insecure-http) lets tokens go over http://.
func (o commitStatusOptions) reporter(allowHTTP bool) *commitstatus.Reporter {
	return &commitstatus.Reporter{Interval: o.interval, Timeout: o.timeout, MaxBackoff: o.maxBackoff,
		AllowInsecureHTTP: allowHTTP}
}
