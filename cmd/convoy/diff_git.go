package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// checkout is a package directory inside a local Git work tree.
type checkout struct {
	repo *git.Repository
	// abs is the package directory's absolute path, rel its slash-separated path in the
	// repository ("." for the root).
	abs, rel string
}

// openCheckout finds the Git repository that holds dir.
func openCheckout(dir string) (*checkout, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, err
	}
	repo, err := git.PlainOpenWithOptions(abs, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("%s: not in a Git repository: %w", dir, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	root, err := filepath.EvalSymlinks(wt.Filesystem.Root())
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("%s is outside the work tree %s", dir, root)
	}
	return &checkout{repo: repo, abs: abs, rel: filepath.ToSlash(rel)}, nil
}

// resolve returns the commit hash of a revision: a branch, tag, remote branch, commit (full
// or abbreviated) or an expression such as HEAD~1.
func (c *checkout) resolve(ref string) (string, error) {
	h, err := c.repo.ResolveRevision(plumbing.Revision(ref))
	if err != nil {
		return "", fmt.Errorf("resolving %q: %w", ref, err)
	}
	return h.String(), nil
}

// extract writes the package directory as it is at commit into a new temporary directory whose
// base name is the package directory's, and returns it with a function that removes it; the
// directory is "" when the commit does not hold the package.
func (c *checkout) extract(commit string) (string, func(), error) {
	co, err := c.repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return "", nil, err
	}
	tree, err := co.Tree()
	if err != nil {
		return "", nil, err
	}
	if c.rel != "." {
		tree, err = tree.Tree(c.rel)
		if errors.Is(err, object.ErrDirectoryNotFound) {
			return "", func() {}, nil
		}
		if err != nil {
			return "", nil, err
		}
	}
	tmp, err := os.MkdirTemp("", "convoy-diff-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	dir := filepath.Join(tmp, filepath.Base(c.abs))
	if err := writeTree(tree, dir); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("%s at %s: %w", c.rel, commit[:12], err)
	}
	return dir, cleanup, nil
}

// writeTree writes the files and symlinks of a tree under dir.
func writeTree(tree *object.Tree, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return tree.Files().ForEach(func(f *object.File) error {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer func() { _ = r.Close() }()
		content, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if f.Mode == filemode.Symlink {
			return os.Symlink(string(content), p)
		}
		return os.WriteFile(p, content, 0o644)
	})
}

// shortRef labels a revision: the name given, with the abbreviated commit when the name is
// not already the commit.
func shortRef(ref, commit string) string {
	if strings.HasPrefix(commit, ref) {
		return commit[:12]
	}
	return ref + " (" + commit[:12] + ")"
}
