package statusmetrics

import (
	"testing"

	"github.com/convoy-gitops/convoy/test/fleet"
)

// env is the management cluster of the tests that read a real cache.
var env *fleet.Fleet

func TestMain(m *testing.M) {
	fleet.Main(m, &env, fleet.Options{}, nil)
}
