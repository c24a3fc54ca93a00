package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/convoy-gitops/convoy/internal/dialpolicy"
	"github.com/convoy-gitops/convoy/sources/helmrepo"
)

// chartFetchFlags say where the Helm chart repositories a package names may send the fetches of
// render, diff and validate. They are the controller's flags of the same names with the same
// defaults: the package comes from Git, whoever pushed it chose the repository, and a CI job or
// a laptop running these commands holds credentials too (a cloud runner's metadata endpoint).
type chartFetchFlags struct {
	// allowLinkLocal lets fetches reach link-local and metadata addresses.
	allowLinkLocal bool
	// allowRedirectsToOtherHosts lets a repository redirect a fetch to another scheme, host or port.
	allowRedirectsToOtherHosts bool
}

// bind registers the flags.
func (c *chartFetchFlags) bind(fl *pflag.FlagSet) {
	fl.BoolVar(&c.allowLinkLocal, strings.TrimPrefix(dialpolicy.AllowLinkLocalFlag, "--"), false,
		"Let Helm chart fetches connect to link-local addresses (169.254.0.0/16, fe80::/10) and cloud metadata endpoints, as the controller's flag of the same name.")
	fl.BoolVar(&c.allowRedirectsToOtherHosts, strings.TrimPrefix(helmrepo.AllowRedirectsToOtherHostsFlag, "--"), false,
		"Let a Helm chart repository redirect a fetch to another scheme, host or port, as the controller's flag of the same name; same-host redirects are always followed.")
}

// options returns the chart fetcher's options for the flags.
func (c chartFetchFlags) options() helmrepo.Options {
	return helmrepo.Options{
		Network:                    dialpolicy.Policy{AllowLinkLocal: c.allowLinkLocal},
		AllowRedirectsToOtherHosts: c.allowRedirectsToOtherHosts,
	}
}
