package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// maxSymlinkHops bounds symlink chains, like the kernel's ELOOP.
const maxSymlinkHops = 40

// maxSymlinkTarget bounds the length of a symlink target.
const maxSymlinkTarget = 4096

// Open returns the tree of commit as an fs.FS, read straight from the object store of key
// (nothing is checked out). A commit that is not stored is fetched on demand, within the
// remote's Timeout (the store's FetchTimeout when it has none); one the remote does not have
// either gives a *CommitNotFoundError, and the store does not look for it again until its
// backoff has passed (StoreOptions.MissingCommitBackoff). The FS is safe for concurrent use,
// follows symlinks only inside the tree, and enforces the store's limits on what is read
// through it.
func (s *Store) Open(ctx context.Context, key Key, commit string) (fs.FS, error) {
	if !IsCommitHash(commit) {
		return nil, fmt.Errorf("invalid commit %q: want 40 lower-case hex digits", commit)
	}
	e := s.entry(key)
	if fsys, err := s.openStored(key, e, commit); fsys != nil || err != nil {
		return fsys, err
	}
	if err := s.fetchMissing(ctx, key, e, commit); err != nil {
		return nil, err
	}
	fsys, err := s.openStored(key, e, commit)
	if fsys == nil && err == nil {
		return nil, &CommitNotFoundError{Key: key, Commit: commit}
	}
	return fsys, err
}

// openStored returns the FS of commit if it is stored, or (nil, nil).
func (s *Store) openStored(key Key, e *entry, commit string) (fs.FS, error) {
	h, err := s.openHandle(key, e)
	if err != nil || h == nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return nil, nil
	}
	tree, err := c.Tree()
	if err != nil {
		e.dropHandle(h)
		return nil, &StoreReadError{Key: key, Commit: commit, Err: fmt.Errorf("reading its tree: %w", err)}
	}
	t := newTreeFS(h, tree, s.limits)
	t.key, t.commit, t.stale = key, commit, func() { e.dropHandle(h) }
	return t, nil
}

// fetchMissing fetches commit into the repository of key from its remote, within the
// remote's timeout; the wait for another fetch of the repository counts against it.
func (s *Store) fetchMissing(ctx context.Context, key Key, e *entry, commit string) error {
	if err := s.knownMissing(key, e, commit); err != nil {
		return err
	}
	remote, err := s.remoteFor(ctx, key, e)
	if err != nil {
		return fmt.Errorf("fetching commit %s of %s: %w", commit, key, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.fetchTimeout(remote))
	defer cancel()
	if err := e.write.lock(ctx); err != nil {
		return fmt.Errorf("fetching commit %s of %s: %w", commit, key, err)
	}
	defer e.write.unlock()
	repo, err := s.ensureRepo(key, remote.URL)
	if err != nil {
		return err
	}
	defer e.reset(&remote)
	if hasCommit(repo, commit) {
		return nil
	}
	err = fetchCommit(ctx, repo, remote, target{rev: Revision{Commit: commit}})
	if errors.Is(err, errCommitNotOnRemote) {
		return s.recordMissing(key, e, commit)
	}
	if err != nil {
		return remote.Redact(fmt.Errorf("fetching commit %s of %s (timeout %s): %w", commit, key, s.fetchTimeout(remote), err))
	}
	return nil
}

// fetchTimeout returns the bound of one on-demand fetch from remote.
func (s *Store) fetchTimeout(remote Remote) time.Duration {
	if remote.Timeout > 0 {
		return remote.Timeout
	}
	return s.opts.FetchTimeout
}

// Verify checks the whole tree of a stored commit against the store's limits and refuses
// symlinks that point outside of it (*LimitError, *UnsafePathError).
func (s *Store) Verify(ctx context.Context, key Key, commit string) error {
	fsys, err := s.Open(ctx, key, commit)
	if err != nil {
		return err
	}
	t := fsys.(*treeFS)
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	var count int
	var total int64
	return t.walk(ctx, t.root, ".", func(p string, e object.TreeEntry) error {
		count++
		if count > s.limits.MaxFiles {
			return &LimitError{Limit: "files", Max: int64(s.limits.MaxFiles)}
		}
		if e.Mode == filemode.Symlink {
			_, err := t.symlinkTarget(p, e.Hash)
			return err
		}
		size, err := t.blobSize(e.Hash)
		if err != nil {
			return err
		}
		if size > s.limits.MaxFileSize {
			return &LimitError{Limit: "file size", Max: s.limits.MaxFileSize, Path: p}
		}
		if total += size; total > s.limits.MaxTotalBytes {
			return &LimitError{Limit: "total size", Max: s.limits.MaxTotalBytes}
		}
		return nil
	})
}

// walk calls fn for every blob (file or symlink) under tree, depth first.
func (t *treeFS) walk(ctx context.Context, tree *object.Tree, dir string, fn func(string, object.TreeEntry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, e := range tree.Entries {
		p := path.Join(dir, e.Name)
		switch e.Mode {
		case filemode.Dir:
			sub, err := t.h.repo.TreeObject(e.Hash)
			if err != nil {
				return t.storeFailed(fmt.Errorf("reading tree %q: %w", p, err))
			}
			if err := t.walk(ctx, sub, p, fn); err != nil {
				return err
			}
		case filemode.Submodule:
			continue
		default:
			if err := fn(p, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// blobSize returns the size of a blob without reading it. Caller holds h.mu.
func (t *treeFS) blobSize(h plumbing.Hash) (int64, error) {
	o, err := t.h.repo.Storer.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return 0, t.storeFailed(fmt.Errorf("reading blob %s: %w", h, err))
	}
	return o.Size(), nil
}

// symlinkTarget reads the target of the symlink at p and returns it joined to p's directory,
// refusing targets outside of the tree. Caller holds h.mu.
func (t *treeFS) symlinkTarget(p string, h plumbing.Hash) (string, error) {
	target, err := t.readSymlink(p, h)
	if err != nil {
		return "", err
	}
	joined := path.Join(path.Dir(p), target)
	if path.IsAbs(target) || joined == ".." || len(joined) > 2 && joined[:3] == "../" {
		return "", &UnsafePathError{Path: p, Target: target}
	}
	return joined, nil
}

// readSymlink reads the target of the symlink at p, as written. Caller holds h.mu.
func (t *treeFS) readSymlink(p string, h plumbing.Hash) (string, error) {
	blob, err := t.h.repo.BlobObject(h)
	if err != nil {
		return "", t.storeFailed(fmt.Errorf("reading symlink %q: %w", p, err))
	}
	if blob.Size > maxSymlinkTarget {
		return "", &UnsafePathError{Path: p, Target: "(too long)"}
	}
	r, err := blob.Reader()
	if err != nil {
		return "", t.storeFailed(fmt.Errorf("reading symlink %q: %w", p, err))
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return "", t.storeFailed(fmt.Errorf("reading symlink %q: %w", p, err))
	}
	return string(b), nil
}
