package sources

import (
	"context"
	"fmt"
	"path"

	"github.com/go-git/go-git/v5/plumbing"
)

// TreeHash returns the hash of the Git tree of the directory dir at commit in the repository of
// key ("" or "." is the root). Package reads are confined to their directory, so two commits
// with the same tree hash for a package's directory hold the same package, byte for byte: a
// rollout need not move a package to a commit that did not change it. A commit that is not
// stored is fetched on demand, as by Open.
func (s *Store) TreeHash(ctx context.Context, key Key, commit, dir string) (string, error) {
	fsys, err := s.Open(ctx, key, commit)
	if err != nil {
		return "", err
	}
	t, ok := fsys.(*treeFS)
	if !ok {
		return "", fmt.Errorf("the tree of %s at %s is not a Git tree", key, commit)
	}
	dir = path.Clean(dir)
	if dir == "." {
		return t.root.Hash.String(), nil
	}
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	n, err := t.lookup(dir)
	if err != nil {
		return "", fmt.Errorf("directory %s of %s at %s: %w", dir, key, commit, err)
	}
	if n.tree == nil {
		return "", fmt.Errorf("%s of %s at %s is not a directory", dir, key, commit)
	}
	return n.tree.Hash.String(), nil
}

// maxAncestryWalk bounds the commits IsAncestor reads: a history longer than that between
// two commits answers false, which a caller treats as "not known to descend".
const maxAncestryWalk = 10000

// IsAncestor reports whether ancestor is commit or one of its ancestors in the repository of
// key, reading at most maxAncestryWalk commits. Both commits are fetched on demand, as by
// Open. A commit that a force-push made unreachable from the branch is not an ancestor of
// the new head: the servers of a fresh store would not serve it.
func (s *Store) IsAncestor(ctx context.Context, key Key, ancestor, commit string) (bool, error) {
	for _, c := range []string{ancestor, commit} {
		if _, err := s.Open(ctx, key, c); err != nil {
			return false, err
		}
	}
	if ancestor == commit {
		return true, nil
	}
	h, err := s.openHandle(key, s.entry(key))
	if err != nil || h == nil {
		return false, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	want := plumbing.NewHash(ancestor)
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{plumbing.NewHash(commit)}
	for len(queue) > 0 && len(seen) < maxAncestryWalk {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		next := queue[0]
		queue = queue[1:]
		if seen[next] {
			continue
		}
		seen[next] = true
		c, err := h.repo.CommitObject(next)
		if err != nil {
			return false, nil // a shallow or collected history: not known to descend
		}
		for _, p := range c.ParentHashes {
			if p == want {
				return true, nil
			}
			queue = append(queue, p)
		}
	}
	return false, nil
}

// FirstParents returns commit and its first parents, newest first, at most limit commits: the
// commits a branch's head had, one after the other, as pull requests merged. It stops after
// until (which it includes), and early at a commit the store does not hold (a shallow or
// collected history). commit is fetched on demand, as by Open.
func (s *Store) FirstParents(ctx context.Context, key Key, commit, until string, limit int) ([]string, error) {
	if _, err := s.Open(ctx, key, commit); err != nil {
		return nil, err
	}
	h, err := s.openHandle(key, s.entry(key))
	if err != nil || h == nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	next := plumbing.NewHash(commit)
	for len(out) < limit {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := h.repo.CommitObject(next)
		if err != nil {
			break
		}
		out = append(out, c.Hash.String())
		if len(c.ParentHashes) == 0 || c.Hash.String() == until {
			break
		}
		next = c.ParentHashes[0]
	}
	return out, nil
}
