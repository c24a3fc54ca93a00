package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/manifests/diff"
)

// errDiffers is returned when the two sides differ, so that convoy exits 1 like diff(1).
var errDiffers = errors.New("the two sides differ")

// troubleError is any other error of convoy diff: convoy exits 2, like diff(1), so that a
// pipeline tells a change from a failure.
type troubleError struct{ error }

// ExitCode is 2.
func (troubleError) ExitCode() int { return 2 }

// Unwrap returns the error.
func (e troubleError) Unwrap() error { return e.error }

// diffOptions are the flags of `convoy diff`.
type diffOptions struct {
	data   templateDataFlags
	from   string
	to     string
	output string
	live   liveDiffOptions
}

// newDiffCmd builds `convoy diff`, which shows object by object what a change of a package does.
func newDiffCmd() *cobra.Command {
	var o diffOptions
	cmd := &cobra.Command{
		Use:   "diff DIR --from REF [--to REF] | diff OLD_DIR NEW_DIR | diff --package NS/NAME",
		Short: "Show, phase by phase and object by object, what a change of a package does",
		Long: "Offline, diff renders a package directory at two Git revisions of the repository that holds it\n" +
			"(--from, and --to or the work tree), or two directories, with the same config and template data,\n" +
			"and prints the objects added, removed and changed, with a unified diff of their YAML without\n" +
			"status and server-set fields. It exits 1 when something differs, 2 on an error.\n" +
			"Live (--package or --hosted-cluster-package), it runs a server-side dry run of --revision\n" +
			"against what the clusters hold and lists what each object would change and what a prune\n" +
			"would delete; it never writes.",
		Example: "  convoy diff packages/extra-component --from origin/main --to HEAD -o markdown\n" +
			"  convoy diff old/extra-component new/extra-component\n" +
			"  convoy diff --package clusters-demo/extra-component --revision HEAD",
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := runDiff(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, &o)
			switch {
			case errors.Is(err, errDiffers):
				cmd.SilenceErrors = true
			case err != nil:
				err = troubleError{err}
			}
			return err
		},
	}
	o.data.bind(cmd.Flags())
	fl := cmd.Flags()
	fl.StringVar(&o.from, "from", "", "Git revision of the old side (branch, tag, commit, HEAD~1...), with one DIR.")
	fl.StringVar(&o.to, "to", "", "Git revision of the new side (default: the files in DIR as they are).")
	fl.StringVarP(&o.output, "output", "o", "text", "Output format: text, markdown or json.")
	o.live.bind(fl)
	fl.Lookup("revision").Usage = "Offline: .revision of both renders (default: the commit of --to, or \"local\"); " +
		"with --package: the Git branch, tag or commit to preview (default: the GitSource's ref)."
	return cmd
}

// runDiff computes the report of the chosen mode, prints it and returns errDiffers when it is
// not empty.
func runDiff(ctx context.Context, stdout, stderr io.Writer, args []string, o *diffOptions) error {
	if o.output != "text" && o.output != "markdown" && o.output != "json" {
		return fmt.Errorf("--output %q: want text, markdown or json", o.output)
	}
	var (
		reports []*diff.Report
		err     error
	)
	if o.live.enabled() {
		if len(args) > 0 || o.from != "" || o.to != "" {
			return errors.New("--package and --hosted-cluster-package take no directory, --from or --to: give the Git ref with --revision")
		}
		reports, err = runLiveDiff(ctx, stderr, &o.live, o.data.revision, o.data.budget)
	} else {
		var r *diff.Report
		r, err = offlineDiff(stderr, args, o)
		reports = []*diff.Report{r}
	}
	if err != nil {
		return err
	}
	if err := writeReports(stdout, o.output, reports, o.live.hostedCluster != ""); err != nil {
		return err
	}
	for _, r := range reports {
		if !r.Empty() {
			return errDiffers
		}
	}
	return nil
}

// offlineDiff renders both sides of an offline diff and compares them.
func offlineDiff(stderr io.Writer, args []string, o *diffOptions) (*diff.Report, error) {
	switch {
	case len(args) == 2 && o.from == "" && o.to == "":
		return diffDirs(stderr, args[0], args[1], &o.data)
	case len(args) == 1 && o.from != "":
		return diffRefs(stderr, args[0], o.from, o.to, &o.data)
	default:
		return nil, errors.New("give a package directory with --from (and optionally --to), two directories, or --package")
	}
}

// diffDirs compares two package directories, both rendered as the first one's package.
func diffDirs(stderr io.Writer, oldDir, newDir string, f *templateDataFlags) (*diff.Report, error) {
	name := filepath.Base(filepath.Clean(oldDir))
	old, err := loadDir(stderr, oldDir, oldDir, name, "local", f)
	if err != nil {
		return nil, err
	}
	cur, err := loadDir(stderr, newDir, newDir, name, "local", f)
	if err != nil {
		return nil, err
	}
	return diff.Renders(oldDir, newDir, old, cur)
}

// diffRefs compares a package directory at two revisions of the Git repository that holds it;
// an empty to is the work tree. Both sides get the same template data, whose revision is
// --revision, else the commit of to (or "local").
func diffRefs(stderr io.Writer, dir, from, to string, f *templateDataFlags) (*diff.Report, error) {
	checkout, err := openCheckout(dir)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(checkout.abs)
	revision, toLabel := "local", dir
	var toCommit string
	if to != "" {
		if toCommit, err = checkout.resolve(to); err != nil {
			return nil, err
		}
		revision, toLabel = toCommit, shortRef(to, toCommit)
	}
	fromCommit, err := checkout.resolve(from)
	if err != nil {
		return nil, err
	}
	old, err := loadCommit(stderr, checkout, fromCommit, name, revision, f)
	if err != nil {
		return nil, err
	}
	var cur *manifests.Rendered
	if toCommit != "" {
		cur, err = loadCommit(stderr, checkout, toCommit, name, revision, f)
	} else {
		cur, err = loadDir(stderr, dir, dir, name, revision, f)
	}
	if err != nil {
		return nil, err
	}
	return diff.Renders(shortRef(from, fromCommit), toLabel, old, cur)
}

// loadCommit renders the package directory of checkout as it is at commit, or returns nil when
// the commit does not hold it.
func loadCommit(stderr io.Writer, c *checkout, commit, name, revision string, f *templateDataFlags) (*manifests.Rendered, error) {
	dir, cleanup, err := c.extract(commit)
	if err != nil || dir == "" {
		return nil, err
	}
	defer cleanup()
	return loadDir(stderr, dir, c.rel+"@"+commit[:12], name, revision, f)
}

// loadDir renders a package directory with the template data of the flags, printing load
// problems under label.
func loadDir(stderr io.Writer, dir, label, name, revision string, f *templateDataFlags) (*manifests.Rendered, error) {
	fsys, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	data, err := f.templateData(name, revision)
	if err != nil {
		return nil, err
	}
	r, err := manifests.LoadWithBudget(fsys, ".", data, f.budget)
	if err != nil {
		return nil, reportLoadError(stderr, label, err)
	}
	return r, nil
}

// writeReports prints the reports in the chosen format, one after the other; in JSON, a list
// when asked for (one report per sampled Package), else the one report.
func writeReports(out io.Writer, format string, reports []*diff.Report, list bool) error {
	if format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if list {
			return enc.Encode(reports)
		}
		return enc.Encode(reports[0])
	}
	for i, r := range reports {
		if i > 0 {
			if _, err := fmt.Fprintln(out); err != nil {
				return err
			}
		}
		write := r.WriteText
		if format == "markdown" {
			write = r.WriteMarkdown
		}
		if err := write(out); err != nil {
			return err
		}
	}
	return nil
}
