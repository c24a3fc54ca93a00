package main

import (
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestBinaryLinksNoTestCode keeps the product binary free of the test harness: no testing
// package, no envtest, nothing under test/.
func TestBinaryLinksNoTestCode(t *testing.T) {
	g := NewWithT(t)
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	g.Expect(err).NotTo(HaveOccurred())
	for _, dep := range strings.Fields(string(out)) {
		g.Expect(dep).NotTo(Equal("testing"), "convoy links the testing package")
		g.Expect(dep).NotTo(ContainSubstring("/envtest"), "convoy links envtest")
		g.Expect(dep).NotTo(HavePrefix("github.com/convoy-gitops/convoy/test/"), "convoy links the test harness")
	}
}
