package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/infrastructure/controlplane"
	"github.com/convoy-gitops/convoy/test/infrastructure/flux"
	"github.com/convoy-gitops/convoy/test/infrastructure/forge"
	"github.com/convoy-gitops/convoy/test/infrastructure/monitoring"
)

// processPackage is the package every server of the tests and the demo is started through.
const processPackage = "github.com/convoy-gitops/convoy/test/infrastructure/process"

// serverPackages maps each package that starts servers to the binaries it runs from bin/, as
// the package itself names them.
var serverPackages = map[string][]string{
	"github.com/convoy-gitops/convoy/test/infrastructure/controlplane": controlplane.Binaries(),
	"github.com/convoy-gitops/convoy/test/infrastructure/monitoring":   monitoring.Binaries(),
	"github.com/convoy-gitops/convoy/test/infrastructure/forge":        forge.Binaries(),
	"github.com/convoy-gitops/convoy/test/infrastructure/flux":         flux.Binaries(),
}

// TestDemoBuildsOnlyTheServersItStarts keeps `make demo` quick on a cold clone: among the
// Makefile's prerequisites of demo (followed through every rule), the servers of bin/ are
// exactly those the demo's command starts, by the packages it imports. `make tools` builds
// every server.
func TestDemoBuildsOnlyTheServersItStarts(t *testing.T) {
	g := NewWithT(t)
	g.Expect(nonTestImporters(g, processPackage)).To(ConsistOf(slices.Collect(maps.Keys(serverPackages))),
		"a package that starts servers through process is missing from serverPackages")
	db := readMakeRules(g)
	g.Expect(db.serversBuiltBy("demo")).To(ConsistOf(serversStartedBy(g, "cmd/convoy-dev")),
		"the servers make demo builds are not those convoy-dev starts")
	var all []string
	for _, names := range serverPackages {
		all = append(all, names...)
	}
	g.Expect(db.serversBuiltBy("tools")).To(ConsistOf(all), "make tools builds every server")
}

// serversStartedBy returns the binaries the packages of serverPackages that cmd (a folder of
// the repository) imports start.
func serversStartedBy(g Gomega, cmd string) []string {
	out := output(g, exec.Command("go", "list", "-deps", repositoryRoot+"/"+cmd))
	var names []string
	for _, pkg := range strings.Fields(out) {
		names = append(names, serverPackages[pkg]...)
	}
	g.Expect(names).NotTo(BeEmpty(), "%s starts no server", cmd)
	return names
}

// nonTestImporters returns the packages of the module whose code (tests aside) imports pkg.
func nonTestImporters(g Gomega, pkg string) []string {
	out := output(g, exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, repositoryRoot+"/..."))
	var importers []string
	for line := range strings.Lines(out) {
		fields := strings.Fields(line)
		if len(fields) > 1 && slices.Contains(fields[1:], pkg) {
			importers = append(importers, fields[0])
		}
	}
	return importers
}

// makeRules are what GNU make reads of the Makefile: its rules and bin/.
type makeRules struct {
	bin   string
	rules map[string][]string
}

// readMakeRules reads the Makefile's rules, prerequisites expanded, with `make -p` in question
// mode: it runs no recipe.
func readMakeRules(g Gomega) makeRules {
	cmd := exec.Command("make", "--print-data-base", "--question", "--no-builtin-rules", "help")
	cmd.Dir = repositoryRoot
	// Note: without the flags of a make this test runs under (make test), whose jobserver is not
	// passed on to this process.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// Note: in question mode make exits with 1, as help is phony and so never up to date.
	out := output(g, cmd, 1)
	db := makeRules{rules: map[string][]string{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "BIN := "); ok {
			db.bin = v
		}
		// A rule is "target: prerequisites" (or "::"); comments start with #, recipes with a
		// tab, and variables and target-specific variables hold an =.
		target, prereqs, ok := strings.Cut(line, ":")
		if !ok || target == "" || strings.ContainsAny(target, "#\t =") || strings.Contains(prereqs, "=") {
			continue
		}
		prereqs = strings.TrimPrefix(prereqs, ":")
		for _, p := range strings.Fields(prereqs) {
			if p != "|" {
				db.rules[target] = append(db.rules[target], p)
			}
		}
	}
	g.Expect(sc.Err()).NotTo(HaveOccurred())
	g.Expect(db.bin).NotTo(BeEmpty(), "make -p printed no BIN")
	g.Expect(db.rules).To(HaveKey("demo"))
	return db
}

// serversBuiltBy returns the servers of bin/ among the prerequisites of target, followed
// through every rule.
func (db makeRules) serversBuiltBy(target string) []string {
	servers := map[string]bool{}
	for _, names := range serverPackages {
		for _, n := range names {
			servers[n] = true
		}
	}
	var built []string
	seen := map[string]bool{target: true}
	queue := []string{target}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, p := range db.rules[next] {
			if seen[p] {
				continue
			}
			seen[p] = true
			if filepath.Dir(p) == db.bin && servers[filepath.Base(p)] {
				built = append(built, filepath.Base(p))
			}
			queue = append(queue, p)
		}
	}
	return built
}

// output runs cmd and returns its standard output, failing with its standard error when it
// exits with a code but 0 and okCodes.
func output(g Gomega, cmd *exec.Cmd, okCodes ...int) string {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && slices.Contains(okCodes, exit.ExitCode()) {
		err = nil
	}
	g.Expect(err).NotTo(HaveOccurred(), "%s: %s", strings.Join(cmd.Args, " "), stderr.String())
	return string(out)
}
