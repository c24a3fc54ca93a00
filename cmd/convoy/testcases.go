package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/convoy-gitops/convoy/manifests"
)

// testCaseFlags are the flags of validate about Package Operator test.template cases.
type testCaseFlags struct {
	// updateFixtures rewrites every case's .test-fixtures.
	updateFixtures bool
}

// validateTestCases runs every test.template case of the package at dir: it renders the case
// and compares the result with .test-fixtures/NAME/, writing the fixtures when they do not exist
// (as Package Operator does) or when update is set. It prints one line per case and returns the
// number of cases that failed; problems are printed as validate prints them.
func validateTestCases(w io.Writer, p pkgDir, cases []manifests.TestCase, f *templateDataFlags, update bool) int {
	fsys, err := openDir(p.root)
	if err != nil {
		fmt.Fprintf(w, "%s: %v\n", p.root, err)
		return len(cases)
	}
	label := filepath.ToSlash(filepath.Clean(p.dir()))
	failed := 0
	for _, tc := range cases {
		if err := validateTestCase(w, p, fsys, tc, f, update); err != nil {
			failed++
			if reportErr := reportLoadError(w, label, err); reportErr != nil {
				fmt.Fprintln(w, reportErr)
			}
		}
	}
	return failed
}

// validateTestCase renders one case and checks or writes its fixtures.
func validateTestCase(w io.Writer, p pkgDir, fsys fs.FS, tc manifests.TestCase, f *templateDataFlags, update bool) error {
	rendered, err := manifests.LoadTestCase(fsys, ".", p.component, tc, f.budget)
	if err != nil {
		return err
	}
	dir := p.dir()
	printWarnings(w, dir, rendered)
	fixtures := filepath.Join(dir, manifests.FixturesDir, tc.Name)
	existing, err := readFixtures(fixtures)
	switch {
	case err == nil && !update:
		if err := manifests.CompareFixtures(tc.Name, rendered.Files(), existing); err != nil {
			return err
		}
		fmt.Fprintf(w, "ok %s: test case %q matches %s\n", dir, tc.Name, filepath.ToSlash(fixtures))
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := writeFixtures(fixtures, rendered.Files()); err != nil {
		return err
	}
	fmt.Fprintf(w, "ok %s: test case %q: wrote %s\n", dir, tc.Name, filepath.ToSlash(fixtures))
	return nil
}

// readFixtures reads every file under a case's fixtures directory, keyed by slash path.
func readFixtures(dir string) (map[string][]byte, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	return out, err
}

// writeFixtures replaces a case's fixtures directory with files.
func writeFixtures(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for p, data := range files {
		target := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// renderTestCase renders the case named name of the local package at dir.
func renderTestCase(dir, name string, f *templateDataFlags) (*manifests.Rendered, error) {
	fsys, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	info, err := manifests.Inspect(fsys, ".", f.component)
	if err != nil {
		return nil, err
	}
	cases := info.TestCases
	for _, tc := range cases {
		if tc.Name == name {
			return manifests.LoadTestCase(fsys, ".", f.component, tc, f.budget)
		}
	}
	names := make([]string, len(cases))
	for i, tc := range cases {
		names[i] = tc.Name
	}
	return nil, fmt.Errorf("%s: no test.template case %q (the manifest has %q)", dir, name, names)
}

// printWarnings prints the warnings of a render, one per line, as "warning: FILE:LINE: ...".
func printWarnings(w io.Writer, dir string, r *manifests.Rendered) {
	for _, e := range r.Warnings {
		loc := *e
		loc.File = filepath.ToSlash(filepath.Join(dir, e.File))
		fmt.Fprintf(w, "warning: %s\n", loc.Error())
	}
}

// pkgDir is a package directory given to validate, or one of its components.
type pkgDir struct {
	// root is the directory given.
	root string
	// component is empty for the root package.
	component string
}

// dir is the directory of the package or component.
func (p pkgDir) dir() string {
	if p.component == "" {
		return p.root
	}
	return filepath.Join(p.root, "components", p.component)
}

// readEnvironmentFile reads a YAML (or JSON) environment, strictly.
func readEnvironmentFile(p string) (*manifests.Environment, error) {
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	env := &manifests.Environment{}
	if err := yaml.UnmarshalStrict(raw, env); err != nil {
		return nil, fmt.Errorf("--environment %s: %w", p, err)
	}
	return env, nil
}
