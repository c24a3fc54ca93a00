package benchtable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/convoy-gitops/convoy/test/bench"
)

// setName is what a run set's name may hold: it becomes part of the files' names.
var setName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*$`)

// AddRuns copies the runs of one set into dir as <date>-<commit>-<name>-<i>.json (without
// "-<i>" for a single run), giving commit to the runs that do not name theirs, and returns the
// files as one name with a brace group, relative to dir's parent (runs/…), as a marker names
// them. Every run must be of one commit, the runs must make the table of spec, and no file is
// overwritten.
func AddRuns(dir, name, commit string, spec Spec, files []string) (string, error) {
	if !setName.MatchString(name) {
		return "", fmt.Errorf("run set name %q: lower-case letters, digits, dots and dashes, e.g. rollout-1000", name)
	}
	if len(files) == 0 {
		return "", errors.New("no runs given: name the bench-results.json of each run")
	}
	runs, err := stampedRuns(commit, files)
	if err != nil {
		return "", err
	}
	if _, err := Render(spec, &RunSet{Names: files, Runs: runs}); err != nil {
		return "", err
	}
	base := fmt.Sprintf("%s-%s-%s", runs[0].Started.UTC().Format("2006-01-02"), runs[0].Commit, name)
	var suffixes []string
	for i := range runs {
		suffixes = append(suffixes, fmt.Sprint(i+1))
	}
	pattern := base + "-{" + strings.Join(suffixes, ",") + "}.json"
	if len(runs) == 1 {
		pattern = base + ".json"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for i, target := range expandBraces(pattern) {
		path := filepath.Join(dir, target)
		if _, err := os.Stat(path); err == nil {
			return "", fmt.Errorf("%s exists: a published run is not replaced; name the new set differently", path)
		}
		if err := bench.WriteJSON(path, runs[i]); err != nil {
			return "", err
		}
	}
	return filepath.ToSlash(filepath.Join(filepath.Base(dir), pattern)), nil
}

// stampedRuns reads the runs and gives commit to those that do not name one; they must then
// all name the same.
func stampedRuns(commit string, files []string) ([]*bench.Results, error) {
	var runs []*bench.Results
	for _, file := range files {
		res, err := readRun(file)
		if err != nil {
			return nil, err
		}
		switch {
		case res.Commit == "" && commit == "":
			return nil, fmt.Errorf("%s does not name the commit it measured: give it with -commit", file)
		case res.Commit == "":
			res.Commit = commit
		case commit != "" && res.Commit != commit:
			return nil, fmt.Errorf("%s measured %s, not %s (-commit)", file, res.Commit, commit)
		}
		if len(runs) > 0 && res.Commit != runs[0].Commit {
			return nil, fmt.Errorf("%s measured %s, %s measured %s: add the runs of each commit as a set of their own",
				file, res.Commit, files[0], runs[0].Commit)
		}
		runs = append(runs, res)
	}
	return runs, nil
}
