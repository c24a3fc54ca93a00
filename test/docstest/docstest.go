// Package docstest finds the documentation pages that the docs tests read: README.md, the pages
// given, and every Markdown page under docs/ except docs/reference/, which is generated from the
// code and checked where it is made.
package docstest

import (
	"io/fs"
	"path/filepath"
	"strings"
)

// Pages returns README.md, then extra, then the Markdown pages under root/docs outside
// docs/reference, each relative to root with forward slashes.
func Pages(root string, extra ...string) ([]string, error) {
	pages := append([]string{"README.md"}, extra...)
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() && rel == "docs/reference" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(rel, ".md") {
			pages = append(pages, rel)
		}
		return nil
	})
	return pages, err
}
