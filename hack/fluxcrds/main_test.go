package main

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestCommittedCRDsAreGenerated regenerates the CRDs into a temporary folder and compares them
// with the committed ones: it fails when `make flux-crds` was not run after a change of the
// pinned version or of controller-gen.
func TestCommittedCRDsAreGenerated(t *testing.T) {
	g := NewWithT(t)
	bin := os.Getenv("CONVOY_TEST_BINARIES")
	if bin == "" {
		bin = "../../bin"
	}
	gen := filepath.Join(bin, "controller-gen")
	g.Expect(gen).To(BeAnExistingFile(), "controller-gen is built by `make manifests` into bin/")
	out := t.TempDir()
	g.Expect(generate(gen, out)).To(Succeed())

	committed := filepath.Join("..", "..", defaultOut)
	want, err := filepath.Glob(filepath.Join(out, crdFiles))
	g.Expect(err).NotTo(HaveOccurred())
	have, err := filepath.Glob(filepath.Join(committed, crdFiles))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(have)).To(ConsistOf(names(want)), "run make flux-crds and commit %s", defaultOut)
	for _, f := range want {
		generated, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		old, err := os.ReadFile(filepath.Join(committed, filepath.Base(f)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(old)).To(Equal(string(generated)), "%s is stale: run make flux-crds", filepath.Base(f))
	}
}

// crdFiles matches the generated files; the folder also holds the kustomization.yaml that
// lists them.
const crdFiles = "notification.toolkit.fluxcd.io_*.yaml"

// names returns the base names of paths.
func names(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}
