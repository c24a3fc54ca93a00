package fleet

import (
	"context"
	"testing"

	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// The vocabulary of test/infrastructure/simfleet, so that tests import one package.
type (
	// Options configure a Fleet.
	Options = simfleet.Options
	// HostedCluster is a simulated hosted cluster.
	HostedCluster = simfleet.HostedCluster
	// HostedClusterInput describes a hosted cluster to add.
	HostedClusterInput = simfleet.HostedClusterInput
)

// Fleet is a test suite's simulated management cluster: simfleet's, with helpers that take a
// test. A nil Fleet (under -short, see Main) skips the tests that need it.
type Fleet struct {
	*simfleet.Fleet
}

// Start starts a fleet outside Main, for a test that needs its own.
func Start(ctx context.Context, opts Options) (*Fleet, error) {
	f, err := simfleet.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Fleet{Fleet: f}, nil
}

// Require skips t when the suite runs without a fleet (go test -short).
func (f *Fleet) Require(t testing.TB) {
	t.Helper()
	if f == nil {
		t.Skip("integration test: needs the API servers of `make tools` (run without -short)")
	}
}

// RequireAPIServers skips t under go test -short, for a test that starts API servers of its
// own (a fleet of its own, convoy-dev, the benchmark) rather than using its suite's.
func RequireAPIServers(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts the API servers of `make tools` (run without -short)")
	}
}
