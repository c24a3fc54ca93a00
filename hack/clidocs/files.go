package clidocs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Sync compares the generated files with those in dir and returns every difference: a file
// missing, differing, or owned (owns says which names the caller generates) but no longer
// generated. With update, it rewrites dir instead and returns the differences it fixed.
func Sync(dir string, files map[string]string, owns func(name string) bool, update bool) ([]string, error) {
	stale, err := staleFiles(dir, files, owns)
	if err != nil {
		return nil, err
	}
	var diffs []string
	for _, name := range stale {
		diffs = append(diffs, fmt.Sprintf("%s is no longer generated", filepath.Join(dir, name)))
		if update {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return nil, err
			}
		}
	}
	for _, name := range sortedKeys(files) {
		path := filepath.Join(dir, name)
		got, err := os.ReadFile(path)
		if err == nil && string(got) == files[name] {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s differs from what the code generates", path))
		if update {
			if err := writeFile(path, files[name]); err != nil {
				return nil, err
			}
		}
	}
	return diffs, nil
}

// staleFiles lists the files of dir the caller owns but no longer generates.
func staleFiles(dir string, files map[string]string, owns func(name string) bool) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, e := range entries {
		if _, ok := files[e.Name()]; !ok && !e.IsDir() && owns(e.Name()) {
			stale = append(stale, e.Name())
		}
	}
	return stale, nil
}

// writeFile writes text to path, creating its folder.
func writeFile(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// sortedKeys returns the names of files in order, so that differences are reported stably.
func sortedKeys(files map[string]string) []string {
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
