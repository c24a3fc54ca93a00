package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/convoy-gitops/convoy/test/bench/benchtable"
)

// usage is printed for a missing or unknown subcommand.
const usage = `usage:
  table print -table SPEC RUN.json...             print the table of a set of runs
  table add -name NAME -table SPEC [-commit C] [-dir docs/evidence/runs] RUN.json...
                                                  commit the runs to the repository and print
                                                  the fenced table to paste into a page
  table rewrite [-root .]                         regenerate every fenced table of README.md
                                                  and docs/evidence/*.md (make bench-tables)
SPEC: "rollout n=1000" (objects=50 for another package size), 'scenario "rollout N=1000 instant"', or "run".`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "print":
		err = printTable(os.Args[2:])
	case "add":
		err = addRuns(os.Args[2:])
	case "rewrite":
		err = rewrite(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, usage)
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

// fail prints err and exits.
func fail(err error) {
	fmt.Fprintln(os.Stderr, "table:", err)
	os.Exit(2)
}

// parseSpec reads -table.
func parseSpec(s string) (benchtable.Spec, error) {
	spec, err := benchtable.ParseSpec(s)
	if err != nil {
		return spec, fmt.Errorf("-table %q: %w", s, err)
	}
	return spec, nil
}

// printTable prints the table of the runs given.
func printTable(args []string) error {
	fs := flag.NewFlagSet("print", flag.ExitOnError)
	table := fs.String("table", "", "the table: \"rollout n=1000\", 'scenario \"NAME\"' or \"run\"")
	_ = fs.Parse(args)
	spec, err := parseSpec(*table)
	if err != nil {
		return err
	}
	set, err := benchtable.LoadRuns(".", fs.Args())
	if err != nil {
		return err
	}
	body, err := benchtable.Render(spec, set)
	if err != nil {
		return err
	}
	fmt.Print(body)
	return nil
}

// addRuns copies the runs into the repository and prints their fenced table.
func addRuns(args []string) error {
	fs := flag.NewFlagSet("add", flag.ExitOnError)
	name := fs.String("name", "", "the set's name, part of its files' names, e.g. rollout-1000")
	table := fs.String("table", "", "the table to print for it: \"rollout n=1000\", 'scenario \"NAME\"' or \"run\"")
	commit := fs.String("commit", "", "the commit the runs measured, for runs that do not say it")
	dir := fs.String("dir", "docs/evidence/runs", "where the published runs live")
	_ = fs.Parse(args)
	spec, err := parseSpec(*table)
	if err != nil {
		return err
	}
	pattern, err := benchtable.AddRuns(*dir, *name, *commit, spec, fs.Args())
	if err != nil {
		return err
	}
	fence := benchtable.Fence{Spec: spec, Runs: []string{pattern}}
	body, err := fence.Generate(filepath.Dir(*dir))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "added %s; paste the table below into a page of %s (or README.md, naming docs/evidence/%s):\n\n",
		pattern, filepath.Dir(*dir), pattern)
	fmt.Print(benchtable.Marker(spec, fence.Runs) + "\n" + body + "<!-- end bench-table -->\n")
	return nil
}

// rewrite regenerates the fenced tables of the published pages.
func rewrite(args []string) error {
	fs := flag.NewFlagSet("rewrite", flag.ExitOnError)
	root := fs.String("root", ".", "the repository's root")
	_ = fs.Parse(args)
	pages, err := benchtable.Pages(*root)
	if err != nil {
		return err
	}
	var changed []string
	for _, page := range pages {
		ok, err := benchtable.RewriteFile(filepath.Join(*root, page))
		if err != nil {
			return err
		}
		if ok {
			changed = append(changed, page)
		}
	}
	fmt.Fprintf(os.Stderr, "rewrote %d page(s): %s\n", len(changed), strings.Join(changed, " "))
	return nil
}
