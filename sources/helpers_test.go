package sources

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// newStore returns a store in a temporary directory.
func newStore(t *testing.T, limits Limits) *Store {
	t.Helper()
	s, err := NewStore(t.TempDir(), StoreOptions{Limits: limits})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return s
}

// testCtx returns a context cancelled at the end of the test.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// makeTempDir returns a directory for process-wide fixtures (benchmarks); it is left to the
// OS temp cleaner.
func makeTempDir() (string, error) { return os.MkdirTemp("", "convoy-bench-*") }
