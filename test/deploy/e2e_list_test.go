package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// makeVariable matches a `NAME := words` assignment of the Makefile, continuation lines included.
var makeVariable = regexp.MustCompile(`(?m)^([A-Z0-9_]+) :=((?:[^\n]*\\\n)*[^\n]*)$`)

// TestE2ETestsExistInTheirPackages keeps the Makefile's E2E_TESTS true: `make test` skips them
// and `make e2e` runs them by name, so a renamed or moved test would silently run nowhere.
// Each name must be a top-level test of a package of E2E_PACKAGES.
func TestE2ETestsExistInTheirPackages(t *testing.T) {
	g := NewWithT(t)
	vars := makefileVariables(g)
	g.Expect(vars).To(HaveKey("E2E_TESTS"))
	g.Expect(vars).To(HaveKey("E2E_PACKAGES"))
	defined := map[string]bool{}
	for _, pkg := range vars["E2E_PACKAGES"] {
		for name := range testFunctions(g, filepath.Join(repositoryRoot, pkg)) {
			defined[name] = true
		}
	}
	g.Expect(vars["E2E_TESTS"]).NotTo(BeEmpty())
	for _, name := range vars["E2E_TESTS"] {
		g.Expect(defined).To(HaveKey(name), "E2E_TESTS names %s, which no package of E2E_PACKAGES defines", name)
	}
}

// makefileVariables returns the words of every simple `:=` assignment of the Makefile.
func makefileVariables(g Gomega) map[string][]string {
	raw, err := os.ReadFile(filepath.Join(repositoryRoot, "Makefile"))
	g.Expect(err).NotTo(HaveOccurred())
	vars := map[string][]string{}
	for _, m := range makeVariable.FindAllStringSubmatch(string(raw), -1) {
		vars[m[1]] = strings.Fields(strings.ReplaceAll(m[2], "\\\n", " "))
	}
	return vars
}

// testFunction matches the declaration of a top-level test.
var testFunction = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)

// testFunctions returns the names of the top-level tests of the package in dir.
func testFunctions(g Gomega, dir string) map[string]bool {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	g.Expect(err).NotTo(HaveOccurred())
	names := map[string]bool{}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		g.Expect(err).NotTo(HaveOccurred())
		for _, m := range testFunction.FindAllStringSubmatch(string(raw), -1) {
			names[m[1]] = true
		}
	}
	return names
}
