package deploy

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// layoutRow matches a row of DEVELOPMENT.md's Layout table: | `path/` | what it holds |.
var layoutRow = regexp.MustCompile("(?m)^\\| `([^`]+)/` \\| .+ \\|$")

// TestLayoutListsEveryPackage keeps DEVELOPMENT.md's Layout table and the tree in step: every
// folder of the module holding Go files has a row, and every row names a folder that exists.
func TestLayoutListsEveryPackage(t *testing.T) {
	g := NewWithT(t)
	doc, err := os.ReadFile(filepath.Join(repositoryRoot, "DEVELOPMENT.md"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(doc)).To(ContainSubstring("\n## Layout\n"))
	section := string(doc)[strings.Index(string(doc), "## Layout"):]
	section = section[:strings.Index(section[1:], "\n## ")+1]
	rows := map[string]bool{}
	for _, m := range layoutRow.FindAllStringSubmatch(section, -1) {
		rows[m[1]] = true
		g.Expect(filepath.Join(repositoryRoot, m[1])).To(BeADirectory(), "the Layout row %s/ names no folder", m[1])
	}
	for _, dir := range goPackageDirs(t) {
		g.Expect(rows).To(HaveKey(dir), "DEVELOPMENT.md's Layout section has no row for %s/", dir)
	}
}

// goPackageDirs returns the folders of the module that hold Go files, relative to its root,
// leaving out testdata, hidden folders and the separate module test/tools.
func goPackageDirs(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	var dirs []string
	err := filepath.WalkDir(repositoryRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repositoryRoot, path)
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "bin" || rel == "test/tools" ||
			(strings.HasPrefix(d.Name(), ".") && rel != ".")) {
			return filepath.SkipDir
		}
		dir := filepath.Dir(rel)
		if !d.IsDir() && strings.HasSuffix(path, ".go") && dir != "." && !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, filepath.ToSlash(dir))
		}
		return nil
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return dirs
}
