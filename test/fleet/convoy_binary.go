package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// ConvoyBinaryEnv names a convoy binary, built from this tree, that the tests run as the
// controller instead of building one each: `make test` builds bin/convoy before the tests and
// sets it, so that the packages that run convoy as a process share one build.
const ConvoyBinaryEnv = "CONVOY_TEST_CONVOY"

// ConvoyBinary returns the binary $CONVOY_TEST_CONVOY names, or builds ./cmd/convoy into dir
// and returns its path.
func ConvoyBinary(dir string) (string, error) {
	if bin := os.Getenv(ConvoyBinaryEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("$%s: %w", ConvoyBinaryEnv, err)
		}
		return bin, nil
	}
	root, err := simfleet.RepositoryRoot()
	if err != nil {
		return "", err
	}
	convoy := filepath.Join(dir, "convoy")
	if out, err := exec.Command("go", "build", "-o", convoy, filepath.Join(root, "cmd", "convoy")).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/convoy: %w\n%s", err, out)
	}
	return convoy, nil
}
