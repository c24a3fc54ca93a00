package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/convoy-gitops/convoy/manifests"
)

// newValidateCmd builds `convoy validate`, which loads package directories and reads
// HostedClusterPackage files offline and lists every problem as "file:line: rule: message",
// exiting non-zero when there is any; it is meant for pull-request CI.
func newValidateCmd() *cobra.Command {
	var (
		f  templateDataFlags
		tf testCaseFlags
	)
	cmd := &cobra.Command{
		Use:   "validate DIR|FILE...",
		Short: "Check package directories and HostedClusterPackage files offline and list every problem, one per line",
		Long: "validate loads each package directory DIR as the controller would, and reads the HostedClusterPackages\n" +
			"of each YAML FILE (objects of other kinds are left alone): no unknown field, no name twice, and no cycle\n" +
			"in spec.dependsOn; it prints the order in which each HostedCluster gets them.",
		Example: "  convoy validate examples/packages/*\n" +
			"  convoy validate fleet/hostedclusterpackages/*.yaml\n" +
			"  convoy validate packages/extra-component --config ci/values.yaml --hosted-cluster clusters/ci",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runValidate(cmd.OutOrStdout(), args, &f, tf.updateFixtures)
		},
	}
	f.bind(cmd.Flags())
	cmd.Flags().BoolVar(&tf.updateFixtures, "update-fixtures", false,
		"Rewrite the .test-fixtures of every test.template case of Package Operator packages (missing ones are always written).")
	return cmd
}

// runValidate validates each package directory of args, printing problems as they are found,
// then the graph of their spec.dependencies (validateGraph), and the HostedClusterPackages of
// each file of args (validateHostedClusterPackages). A Package
// Operator package is validated as `kubectl package validate` does when no --config is given:
// by running its test.template cases (see validateTestCases), or, without any, by checking its
// manifest and plain files only; with --config it is also rendered for the flags.
func runValidate(w io.Writer, args []string, f *templateDataFlags, updateFixtures bool) error {
	var dirs, files []string
	for _, arg := range args {
		if info, err := os.Stat(arg); err == nil && info.Mode().IsRegular() {
			files = append(files, arg)
			continue
		}
		dirs = append(dirs, arg)
	}
	var errs []error
	failed := 0
	for _, dir := range dirs {
		if !validateDir(w, dir, f, updateFixtures) {
			failed++
		}
	}
	switch {
	case failed > 0:
		errs = append(errs, fmt.Errorf("%d of %d package(s) invalid", failed, len(dirs)))
	case !validateGraph(w, dirs):
		errs = append(errs, errors.New("the packages' spec.dependencies form a cycle"))
	}
	if len(files) > 0 {
		if n := validateHostedClusterPackages(w, files); n > 0 {
			errs = append(errs, fmt.Errorf("%d problem(s) in the HostedClusterPackages of %d file(s)", n, len(files)))
		}
	}
	return errors.Join(errs...)
}

// validateDir validates one package directory, and each component of a multi-component
// Package Operator package, as `kubectl package validate` does; it reports whether all are valid.
func validateDir(out io.Writer, dir string, f *templateDataFlags, updateFixtures bool) bool {
	w := &distinctLines{w: out, seen: map[string]bool{}}
	info, err := inspectLocal(dir, "")
	if err != nil {
		return validatePackage(w, pkgDir{root: dir}, manifests.PackageInfo{}, f, updateFixtures)
	}
	ok := validatePackage(w, pkgDir{root: dir}, info, f, updateFixtures)
	for _, name := range info.Components {
		p := pkgDir{root: dir, component: name}
		cinfo, err := inspectLocal(dir, name)
		ok = validatePackage(w, p, cinfo, f, updateFixtures) && err == nil && ok
	}
	return ok
}

// validatePackage validates the root package or one component and reports whether it is valid.
func validatePackage(w io.Writer, p pkgDir, info manifests.PackageInfo, f *templateDataFlags, updateFixtures bool) bool {
	if len(info.TestCases) > 0 && validateTestCases(w, p, info.TestCases, f, updateFixtures) > 0 {
		return false
	}
	var (
		rendered *manifests.Rendered
		err      error
		what     string
	)
	switch {
	case info.PKO && (f.configFile == "" || p.component != "") && len(info.TestCases) > 0:
		return true
	case info.PKO && (f.configFile == "" || p.component != ""):
		what = " in plain files (no test.template case and no --config: templates not rendered)"
		rendered, err = staticLocal(p)
	default:
		rendered, err = renderLocal(p.root, f)
	}
	if err != nil {
		if reportErr := reportLoadError(w, filepath.ToSlash(filepath.Clean(p.dir())), err); reportErr != nil {
			fmt.Fprintln(w, reportErr)
		}
		return false
	}
	printWarnings(w, p.dir(), rendered)
	objects := 0
	for _, ph := range rendered.Phases {
		objects += len(ph.Objects)
	}
	fmt.Fprintf(w, "ok %s: %d phases, %d objects%s\n", p.dir(), len(rendered.Phases), objects, what)
	return true
}

// staticLocal checks a local Package Operator package, or one of its components, without
// rendering its templates.
func staticLocal(p pkgDir) (*manifests.Rendered, error) {
	fsys, err := openDir(p.root)
	if err != nil {
		return nil, err
	}
	return manifests.LoadStatic(fsys, ".", p.component)
}

// inspectLocal reads what the manifest of a local package, or of one of its components, declares.
func inspectLocal(dir, component string) (manifests.PackageInfo, error) {
	fsys, err := openDir(dir)
	if err != nil {
		return manifests.PackageInfo{}, err
	}
	return manifests.Inspect(fsys, ".", component)
}

// distinctLines writes each distinct line once: a problem of the manifest or of a plain file
// is found again by every test.template case and every component that reads it, and is
// reported once, as `kubectl package validate` does. Writes must end with a newline.
type distinctLines struct {
	w    io.Writer
	seen map[string]bool
}

// Write writes the lines of p not written before.
func (d *distinctLines) Write(p []byte) (int, error) {
	for line := range bytes.Lines(p) {
		if d.seen[string(line)] {
			continue
		}
		d.seen[string(line)] = true
		if _, err := d.w.Write(line); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
