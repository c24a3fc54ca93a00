package main

import (
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestBinaryLinksNoTestCode keeps the product binary free of the test harness and of the
// simulation of a management cluster: no testing package, no envtest, nothing under test/ (the
// control plane launcher, the Git server and the fault network live in test/infrastructure),
// and not the development binary's demo.
func TestBinaryLinksNoTestCode(t *testing.T) {
	g := NewWithT(t)
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	g.Expect(err).NotTo(HaveOccurred())
	for _, dep := range strings.Fields(string(out)) {
		g.Expect(dep).NotTo(Equal("testing"), "convoy links the testing package")
		g.Expect(dep).NotTo(ContainSubstring("/envtest"), "convoy links envtest")
		g.Expect(dep).NotTo(HavePrefix("github.com/convoy-gitops/convoy/test/"), "convoy links the test harness or the simulation")
		g.Expect(dep).NotTo(HavePrefix("github.com/convoy-gitops/convoy/cmd/convoy-dev"), "convoy links the development demo")
		g.Expect(dep).NotTo(Equal("net/http/cgi"), "convoy links the Git server's CGI host")
	}
}
