package manifests

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FixturesDir is the directory, in a package directory, of the expected output of each
// test.template case: FixturesDir/NAME/ holds one file per rendered YAML file with objects.
const FixturesDir = ".test-fixtures"

// LoadStatic checks the package at dir (or its component, when not empty) as `kubectl package validate` checks a Package Operator
// package without test cases: the manifest, the lock file and the objects of its plain YAML
// files, without rendering its templates or checking a config.
func LoadStatic(fsys fs.FS, dir, component string) (*Rendered, error) {
	r, _, err := load(fsys, dir, TemplateData{Component: component, staticOnly: true}, DefaultRenderBudget)
	return r, err
}

// LoadTestCase renders the package at dir (or its component, when not empty) for the test case
// tc: tc's package metadata, config
// and environment, every image resolved to Package Operator's static test image. The returned
// Rendered's Files are what the case's fixtures must hold.
func LoadTestCase(fsys fs.FS, dir, component string, tc TestCase, b RenderBudget) (*Rendered, error) {
	data, err := testCaseData(tc)
	if err != nil {
		return nil, err
	}
	data.Component = component
	r, _, err := load(fsys, dir, data, b)
	return r, err
}

// Files returns, for a Rendered of LoadTestCase, the text of each YAML file that holds objects
// (templates rendered and named without their suffix); nil for other renders.
func (r *Rendered) Files() map[string][]byte {
	return r.files
}

// CompareFixtures compares the files of a test case's render with its fixtures (both keyed by
// path relative to the fixtures directory of the case): every file must be in the fixtures with
// the same text, and the fixtures may hold nothing else. It returns Errors naming the fixture
// file and, for a difference, the first line that differs.
func CompareFixtures(caseName string, files, fixtures map[string][]byte) error {
	errs := &errorList{}
	at := func(p string) string { return path.Join(FixturesDir, caseName, p) }
	for _, p := range slices.Sorted(maps.Keys(files)) {
		want, ok := fixtures[p]
		switch {
		case !ok:
			errs.add(at(p), 0, RuleTestFixture, "test case %q renders %s, which is not in the fixtures", caseName, p)
		case !bytes.Equal(want, files[p]):
			line, w, g := firstDifference(want, files[p])
			errs.add(at(p), line, RuleTestFixture, "test case %q renders %s differently: fixture has %q, render has %q",
				caseName, p, w, g)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(fixtures)) {
		if _, ok := files[p]; !ok {
			errs.add(at(p), 0, RuleTestFixture, "test case %q renders no objects into %s: the fixture should not exist", caseName, p)
		}
	}
	return errs.err()
}

// firstDifference returns the 1-based line where a and b first differ, and that line of each
// ("<end of file>" past the end).
func firstDifference(a, b []byte) (int, string, string) {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	lineOf := func(ls []string, i int) string {
		if i < len(ls) {
			return ls[i]
		}
		return "<end of file>"
	}
	for i := 0; ; i++ {
		if i >= len(al) || i >= len(bl) || al[i] != bl[i] {
			return i + 1, lineOf(al, i), lineOf(bl, i)
		}
	}
}

// cleanDir normalizes a package directory path for an fs.FS.
func cleanDir(dir string) string {
	dir = path.Clean(dir)
	if dir == "" || dir == "/" {
		return "."
	}
	return dir
}

// checkTestCaseNames checks test case names as Package Operator does: each names a fixtures
// directory, so it must be a valid ConfigMap key and unique.
func (m *manifest) checkTestCaseNames(errs *errorList) {
	seen := map[string]bool{}
	for i, tc := range m.testCases {
		at := m.lines.line(fmt.Sprintf("test.template[%d]", i))
		if msgs := validation.IsConfigMapKey(tc.Name); len(msgs) > 0 {
			errs.add(m.file, at, RuleInvalidManifest, "test.template[%d].name %q: %s", i, tc.Name, strings.Join(msgs, ", "))
		}
		if seen[tc.Name] {
			errs.add(m.file, at, RuleInvalidManifest, "test.template[%d].name %q is used twice", i, tc.Name)
		}
		seen[tc.Name] = true
	}
}
