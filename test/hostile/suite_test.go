package hostile

import (
	"testing"

	"github.com/convoy-gitops/convoy/test/fleet"
)

// env is the management cluster the controller process reconciles; nil under go test -short.
var env *fleet.Fleet

func TestMain(m *testing.M) {
	fleet.Main(m, &env, fleet.Options{}, nil)
}
