package sources

import (
	"context"
	"fmt"
	"path"
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
