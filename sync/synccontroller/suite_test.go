package synccontroller

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/fleet"
)

// env is the simulated management cluster shared by the package's tests; blue is a hosted
// cluster that stays up for the whole run. Tests that stop or delete a hosted cluster add
// their own.
var (
	env  *fleet.Fleet
	blue *fleet.HostedCluster
)

// requireMemory skips a test that measures what the engine's memory saves when the engines
// have none (CONVOY_TEST_ENGINE_MEMORY=off).
func requireMemory(t *testing.T) {
	t.Helper()
	if statelessEngines {
		t.Skip("measures the engine's memory; the engines have none (CONVOY_TEST_ENGINE_MEMORY=off)")
	}
}

func TestMain(m *testing.M) {
	statelessEngines = os.Getenv("CONVOY_TEST_ENGINE_MEMORY") == "off"
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	fleet.Main(m, &env, fleet.Options{}, func(ctx context.Context, f *fleet.Fleet) (func(), error) {
		var err error
		if blue, err = f.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "blue"}); err != nil {
			return nil, err
		}
		return startManager(ctx)
	})
}
