package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// corpus lists the globs, relative to the repository root, of the corpus's package directories.
var corpus = []string{
	"config/packages/*",
	"cmd/kubectl-package/buildcmd/testdata",
	"cmd/kubectl-package/validatecmd/testdata",
	"integration/kubectl-package/testdata/packages/valid/*",
	"integration/kubectl-package/testdata/packages/invalid/*",
}

func main() {
	repo := flag.String("repo", "", "Package Operator's Git repository (a clone or a bare mirror)")
	commit := flag.String("commit", "HEAD", "commit of the repository to read the corpus from")
	verbose := flag.Bool("v", false, "print convoy's output for every package")
	module := flag.String("module", "../..", "root of the convoy module, whose cmd/convoy is built")
	flag.Parse()
	if *repo == "" {
		fmt.Fprintln(os.Stderr, "usage: pkocorpus -repo DIR [-commit REV] [-module DIR] [-v]")
		os.Exit(2)
	}
	if err := run(*repo, *commit, *module, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run extracts the corpus at commit into a temporary directory, builds convoy and validates each
// package, printing one line per package and the figure.
func run(repo, commit, module string, verbose bool) error {
	tmp, err := os.MkdirTemp("", "pkocorpus-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	full, err := output(exec.Command("git", "-C", repo, "rev-parse", commit))
	if err != nil {
		return err
	}
	if err := extract(repo, strings.TrimSpace(full), tmp); err != nil {
		return err
	}
	convoy := filepath.Join(tmp, "convoy")
	if _, err := output(exec.Command("go", "build", "-C", module, "-o", convoy, "./cmd/convoy")); err != nil {
		return fmt.Errorf("building convoy: %w", err)
	}
	dirs, err := packages(filepath.Join(tmp, "corpus"))
	if err != nil {
		return err
	}
	fmt.Printf("Package Operator commit %s\n", strings.TrimSpace(full))
	match := 0
	for _, dir := range dirs {
		rel, _ := filepath.Rel(filepath.Join(tmp, "corpus"), dir)
		want := "valid"
		if strings.Contains(rel, "/invalid/") {
			want = "invalid"
		}
		out, err := exec.Command(convoy, "validate", dir).CombinedOutput()
		got := "valid"
		if err != nil {
			got = "invalid"
		}
		verdict := "MISMATCH"
		if got == want {
			verdict, match = "match", match+1
		}
		fmt.Printf("%-8s PKO %-7s convoy %-7s %s\n", verdict, want, got, rel)
		if verbose || got != want {
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				fmt.Printf("           %s\n", strings.ReplaceAll(l, dir+"/", ""))
			}
		}
	}
	fmt.Printf("%d of %d packages get Package Operator's verdict\n", match, len(dirs))
	return nil
}

// extract writes the corpus of commit into dir/corpus with git archive.
func extract(repo, commit, dir string) error {
	root := filepath.Join(dir, "corpus")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	archive := exec.Command("git", "-C", repo, "archive", commit, "config/packages", "cmd/kubectl-package",
		"integration/kubectl-package/testdata/packages")
	tar := exec.Command("tar", "-x", "-C", root)
	var err error
	if tar.Stdin, err = archive.StdoutPipe(); err != nil {
		return err
	}
	if err := archive.Start(); err != nil {
		return err
	}
	if out, err := tar.CombinedOutput(); err != nil {
		return fmt.Errorf("tar: %w: %s", err, out)
	}
	return archive.Wait()
}

// packages lists the corpus's package directories (those with a manifest.yaml), sorted.
func packages(root string) ([]string, error) {
	var dirs []string
	for _, g := range corpus {
		matches, err := filepath.Glob(filepath.Join(root, g, "manifest.yaml"))
		if err != nil {
			return nil, err
		}
		for _, m := range matches {
			dirs = append(dirs, filepath.Dir(m))
		}
	}
	slices.Sort(dirs)
	return dirs, nil
}

// output runs cmd and returns its standard output; the error carries its standard error.
func output(cmd *exec.Cmd) (string, error) {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	return string(out), nil
}
