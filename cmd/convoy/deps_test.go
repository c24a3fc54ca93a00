package main

import (
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// testingImporters are the packages convoy links that import the testing package themselves,
// only to ask testing.Testing(): Helm v4 changes its version and default capabilities under
// test. No other package may import it.
var testingImporters = map[string]bool{
	"helm.sh/helm/v4/internal/version": true,
	"helm.sh/helm/v4/pkg/chart/common": true,
}

// TestBinaryLinksNoTestCode keeps the product binary free of the test harness and of the
// simulation of a management cluster: no package but testingImporters imports testing, no
// envtest, nothing under test/ (the control plane launcher, the Git server and the fault network
// live in test/infrastructure), and not the development binary's demo.
func TestBinaryLinksNoTestCode(t *testing.T) {
	g := NewWithT(t)
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").Output()
	g.Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		dep := fields[0]
		if !testingImporters[dep] {
			g.Expect(fields[1:]).NotTo(ContainElement("testing"), "%s imports the testing package", dep)
		}
		g.Expect(dep).NotTo(ContainSubstring("/envtest"), "convoy links envtest")
		g.Expect(dep).NotTo(HavePrefix("github.com/convoy-gitops/convoy/test/"), "convoy links the test harness or the simulation")
		g.Expect(dep).NotTo(HavePrefix("github.com/convoy-gitops/convoy/cmd/convoy-dev"), "convoy links the development demo")
		g.Expect(dep).NotTo(Equal("net/http/cgi"), "convoy links the Git server's CGI host")
	}
}
