package manifests

import (
	"errors"
	"io/fs"
	"testing"
	"testing/fstest"

	. "github.com/onsi/gomega"
)

// symlink is a MapFS entry for a symbolic link to target.
func symlink(target string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink | 0o777}
}

// repoWithPackage is a repository with the package pkg, a sibling directory shared and a
// file at the root.
func repoWithPackage() fstest.MapFS {
	return fstest.MapFS{
		"pkg/manifest.yaml":   {Data: []byte(testManifest)},
		"pkg/sub/a.yaml":      {Data: []byte(configMap("a", "one"))},
		"shared/b.yaml":       {Data: []byte(configMap("b", "one"))},
		"root.yaml":           {Data: []byte(configMap("root", "one"))},
		"shared/manifest.yml": {Data: []byte(testManifest)},
	}
}

func TestSymlinksInsideThePackageAreFollowed(t *testing.T) {
	g := NewWithT(t)
	fsys := repoWithPackage()
	fsys["pkg/link.yaml"] = symlink("sub/a.yaml")
	fsys["pkg/sub/up.yaml"] = symlink("../sub/a.yaml")
	fsys["pkg/dirlink"] = symlink("sub")
	fsys["pkg/via.yaml"] = symlink("dirlink/../sub/./a.yaml")
	errs := loadPackageErrors(t, fsys)
	g.Expect(errs).To(HaveLen(3), "every link is read: ConfigMap a is defined four times")
	g.Expect(errs).To(HaveEach(HaveField("Rule", RuleDuplicateObject)))
	g.Expect(errs).To(haveProblem("sub/up.yaml", RuleDuplicateObject, "is also defined at link.yaml:1"))
	g.Expect(errs).To(haveProblem("via.yaml", RuleDuplicateObject, "is also defined at"))
}

func TestSymlinksLeavingThePackageAreRefused(t *testing.T) {
	for name, target := range map[string]string{
		"a sibling directory of the repository": "../shared/b.yaml",
		"the repository root":                   "../root.yaml",
		"out and back in":                       "../pkg/sub/a.yaml",
		"an absolute path":                      "/etc/passwd",
		"through a directory link":              "sub/../../shared/b.yaml",
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			fsys := repoWithPackage()
			fsys["pkg/objects.yaml"] = symlink(target)
			errs := loadPackageErrors(t, fsys)
			g.Expect(errs).To(haveProblem("objects.yaml", RuleSymlinkOutside, "symlink objects.yaml -> "+target+" leads outside the package directory"))
		})
	}
}

func TestSymlinkedDirectoryLeavingThePackageIsRefused(t *testing.T) {
	g := NewWithT(t)
	fsys := repoWithPackage()
	fsys["pkg/shared"] = symlink("../shared")
	fsys["pkg/x.yaml"] = symlink("shared/b.yaml")
	errs := loadPackageErrors(t, fsys)
	g.Expect(errs).To(haveProblem("x.yaml", RuleSymlinkOutside, "symlink shared -> ../shared leads outside the package directory"))
}

// loadPackageErrors loads the package pkg, which must be invalid, and returns its problems.
func loadPackageErrors(t *testing.T, fsys fstest.MapFS) Errors {
	t.Helper()
	_, err := Load(fsys, "pkg", TemplateData{})
	var errs Errors
	NewWithT(t).Expect(errors.As(err, &errs)).To(BeTrue(), "want Errors, got %v", err)
	return errs
}
