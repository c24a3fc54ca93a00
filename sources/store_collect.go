package sources

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// Defaults of the store's bound.
const (
	// DefaultMaxRepoBytes is the default of StoreOptions.MaxRepoBytes.
	DefaultMaxRepoBytes = 1 << 30
	// DefaultCollectPackLimit is the default of StoreOptions.CollectPackLimit.
	DefaultCollectPackLimit = 20
	// DefaultPackGrace is the default of StoreOptions.PackGrace.
	DefaultPackGrace = 5 * time.Minute
)

// pinPrefix names the refs that keep a commit in the store: refs/convoy/commits/<hash>.
const pinPrefix = "refs/convoy/commits/"

// RepoSizeError says that a repository is larger than the store's bound after a collection.
type RepoSizeError struct {
	// Key of the source.
	Key Key
	// Bytes is the repository's size.
	Bytes int64
	// Max is the bound (--storage-max-repo-size).
	Max int64
}

// Error implements error.
func (e *RepoSizeError) Error() string {
	return fmt.Sprintf("the repository of source %s takes %d bytes after garbage collection, above the bound of %d bytes: the history the store must keep is too large (raise --storage-max-repo-size, or point the GitSource at a smaller repository)",
		e.Key, e.Bytes, e.Max)
}

// CollectResult says what a collection did.
type CollectResult struct {
	// Collected is false when the repository did not need a collection yet.
	Collected bool
	// Pinned counts the commits kept by a refs/convoy/commits ref.
	Pinned int
	// Dropped counts the refs removed.
	Dropped int
	// Bytes is the size of the repository: its packs, loose objects and refs, without the
	// superseded packs that wait for PackGrace before they are deleted.
	Bytes int64
	// Packs counts the live pack files.
	Packs int
}

// Collect garbage-collects the repository of key when it holds more than CollectPackLimit
// packs, or when force is set: it calls keep, under the repository's write lock so that no
// fetch runs meanwhile, and pins every commit it returns that the repository holds with a
// refs/convoy/commits ref, drops every other ref (branches and tags fetched to find a commit,
// pins no longer needed) unless it points at a kept commit, and repacks what is still
// reachable into one pack. Superseded packs are deleted once older than PackGrace, so that a
// render reading the old packs is never cut short. It returns a *RepoSizeError when the
// repository is still larger than MaxRepoBytes.
//
// keep must return every commit that anything may still open: the GitSource's artifact, the
// revisions of its Packages, the commits of ControllerRevisions.
func (s *Store) Collect(ctx context.Context, key Key, keep func() ([]string, error), force bool) (CollectResult, error) {
	e := s.entry(key)
	if err := e.write.lock(ctx); err != nil {
		return CollectResult{}, err
	}
	defer e.write.unlock()
	dir := s.dir(key)
	repo, err := git.PlainOpen(dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return CollectResult{}, nil
	}
	if err != nil {
		return CollectResult{}, fmt.Errorf("opening repository of %s: %w", key, err)
	}
	var res CollectResult
	if force || s.packCount(dir, e) > s.opts.CollectPackLimit {
		before := packsIn(dir)
		commits, err := keep()
		if err != nil {
			return res, fmt.Errorf("listing the commits to keep in %s: %w", key, err)
		}
		if res, err = s.collect(repo, commits); err != nil {
			return res, fmt.Errorf("collecting repository of %s: %w", key, err)
		}
		e.supersede(supersededBy(before, packsIn(dir)), s.now())
	}
	s.deleteSuperseded(e)
	res.Bytes, res.Packs, err = liveSize(dir, e.supersededPacks())
	if err != nil {
		return res, err
	}
	if res.Bytes > s.opts.MaxRepoBytes {
		return res, &RepoSizeError{Key: key, Bytes: res.Bytes, Max: s.opts.MaxRepoBytes}
	}
	return res, nil
}

// supersededBy returns the packs of before that a repack which left after replaced: all of
// them when it wrote a new pack; none when the new pack has the name of an old one (it held
// exactly what is reachable already, and which one it is cannot be told).
func supersededBy(before, after []string) []string {
	old := make(map[string]bool, len(before))
	for _, p := range before {
		old[p] = true
	}
	for _, p := range after {
		if !old[p] {
			return before
		}
	}
	return nil
}

// supersede records that the packs of before (paths) are superseded by a repack at now, and
// drops the cached handle so that readers see the new pack.
func (e *entry) supersede(before []string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.handle = nil
	if e.superseded == nil {
		e.superseded = map[string]time.Time{}
	}
	for _, p := range before {
		base := strings.TrimSuffix(p, ".pack")
		if _, ok := e.superseded[base]; !ok {
			e.superseded[base] = now // the grace runs from the first repack that replaced it
		}
	}
}

// deleteSuperseded deletes the packs superseded for longer than PackGrace: readers that
// opened the repository before the repack have had that long to finish. Caller holds the
// write lock.
func (s *Store) deleteSuperseded(e *entry) {
	cutoff := s.now().Add(-s.opts.PackGrace)
	e.mu.Lock()
	defer e.mu.Unlock()
	for base, at := range e.superseded {
		if at.After(cutoff) {
			continue
		}
		_ = os.Remove(base + ".idx")
		_ = os.Remove(base + ".pack")
		delete(e.superseded, base)
	}
}

// supersededPacks returns the packs waiting for deletion.
func (e *entry) supersededPacks() map[string]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]bool, len(e.superseded))
	for base := range e.superseded {
		out[base] = true
	}
	return out
}

// collect pins keep, drops the other refs and repacks.
func (s *Store) collect(repo *git.Repository, keep []string) (CollectResult, error) {
	res := CollectResult{Collected: true}
	kept := map[plumbing.Hash]bool{}
	for _, c := range keep {
		if !hasCommit(repo, c) {
			continue
		}
		h := plumbing.NewHash(c)
		if !kept[h] {
			kept[h] = true
			res.Pinned++
		}
		if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(pinPrefix+c), h)); err != nil {
			return res, fmt.Errorf("pinning %s: %w", c, err)
		}
	}
	dropped, err := dropRefs(repo, kept)
	res.Dropped = dropped
	if err != nil {
		return res, err
	}
	// Note: the repack deletes no pack (none is older than the epoch): superseded packs are
	// deleted by deleteSuperseded once they have been superseded for PackGrace.
	err = repo.RepackObjects(&git.RepackConfig{OnlyDeletePacksOlderThan: time.Unix(1, 0)})
	return res, err
}

// dropRefs removes the branches, tags and pins that do not point at a kept commit.
func dropRefs(repo *git.Repository, kept map[plumbing.Hash]bool) (int, error) {
	refs, err := repo.Storer.IterReferences()
	if err != nil {
		return 0, err
	}
	var drop []plumbing.ReferenceName
	err = refs.ForEach(func(r *plumbing.Reference) error {
		name := r.Name().String()
		if r.Type() != plumbing.HashReference || kept[r.Hash()] {
			return nil
		}
		if strings.HasPrefix(name, "refs/heads/") || strings.HasPrefix(name, "refs/tags/") || strings.HasPrefix(name, pinPrefix) {
			drop = append(drop, r.Name())
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, n := range drop {
		if err := repo.Storer.RemoveReference(n); err != nil {
			return 0, fmt.Errorf("removing %s: %w", n, err)
		}
	}
	return len(drop), nil
}

// packCount returns the number of pack files of the repository in dir, without those that
// wait for deletion.
func (s *Store) packCount(dir string, e *entry) int {
	superseded := e.supersededPacks()
	n := 0
	for _, p := range packsIn(dir) {
		if !superseded[strings.TrimSuffix(p, ".pack")] {
			n++
		}
	}
	return n
}

// packsIn returns the pack files of the repository in dir.
func packsIn(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	return m
}

// liveSize returns the size of the repository in dir and its pack count, without the packs
// of superseded (those wait for PackGrace before they are deleted).
func liveSize(dir string, superseded map[string]bool) (int64, int, error) {
	var total int64
	packs := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		base := strings.TrimSuffix(strings.TrimSuffix(p, ".pack"), ".idx")
		if superseded[base] {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".pack") {
			packs++
		}
		total += info.Size()
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("measuring %s: %w", dir, err)
	}
	return total, packs, nil
}

// Has reports whether the repository of key holds commit, reading the disk (not the handle
// cached for readers).
func (s *Store) Has(key Key, commit string) bool {
	repo, err := git.PlainOpen(s.dir(key))
	return err == nil && hasCommit(repo, commit)
}
