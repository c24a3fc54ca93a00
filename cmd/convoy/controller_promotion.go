package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/convoy-gitops/convoy/rollout/rolloutcontroller"
	"github.com/convoy-gitops/convoy/sources"
)

// promotionOptions name this management cluster and its sector, for HostedClusterPackages
// with spec.promotion, and tune the Publisher of their records.
type promotionOptions struct {
	identity        rolloutcontroller.Identity
	publishInterval time.Duration
	publishTimeout  time.Duration
}

func (o *promotionOptions) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.identity.ManagementCluster, "management-cluster", "",
		"This management cluster's name (a DNS label), under which it publishes its rollouts for the sectors after it; needs --sector.")
	fs.StringVar(&o.identity.Sector, "sector", "",
		"This management cluster's sector (a DNS label), as the package repository's sector map lists it; needs --management-cluster.")
	fs.DurationVar(&o.publishInterval, "promotion-publish-interval", rolloutcontroller.DefaultPublishInterval,
		"Least time between two pushes of one promotion record.")
	fs.DurationVar(&o.publishTimeout, "promotion-publish-timeout", rolloutcontroller.DefaultPublishTimeout,
		"Timeout of one push of a promotion record.")
}

// publisher returns the Publisher of the records, pushing with the store's remotes.
func (o promotionOptions) publisher(store *sources.Store) *rolloutcontroller.Publisher {
	return &rolloutcontroller.Publisher{Identity: o.identity, Remotes: store, Interval: o.publishInterval,
		Timeout: o.publishTimeout}
}
