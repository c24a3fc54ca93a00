package main

import (
	"flag"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/hack/clidocs"
)

var update = flag.Bool("update", false, "rewrite docs/reference/cli/convoy-dev.md from the command")

// TestReferenceIsGenerated keeps docs/reference/cli/convoy-dev.md in step with the command: it
// fails when the page differs from what the command generates, and rewrites it with -update
// (`make docs`).
func TestReferenceIsGenerated(t *testing.T) {
	g := NewWithT(t)
	// The default of --kubeconfig-out is under the temporary folder: the page shows Linux's.
	t.Setenv("TMPDIR", "/tmp")
	pages, err := clidocs.CommandPages(newRootCmd())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pages).To(HaveLen(1))
	owns := func(name string) bool { return strings.HasPrefix(name, "convoy-dev") }
	diffs, err := clidocs.Sync("../../docs/reference/cli", pages, owns, *update)
	g.Expect(err).NotTo(HaveOccurred())
	if !*update {
		g.Expect(diffs).To(BeEmpty(), "run make docs and commit docs/reference")
	}
}
