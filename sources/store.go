package sources

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"k8s.io/apimachinery/pkg/types"
)

// Key names one source in the store: the namespace and name of its GitSource.
type Key struct {
	// Namespace of the GitSource.
	Namespace string
	// Name of the GitSource.
	Name string
}

// KeyFor returns the store key of the GitSource namespace/name. The Package controller uses
// it with spec.sourceRef (namespace defaulted to the Package's).
func KeyFor(namespace, name string) Key { return Key{Namespace: namespace, Name: name} }

// KeyOf returns the store key of a namespaced name.
func KeyOf(nn types.NamespacedName) Key { return Key{Namespace: nn.Namespace, Name: nn.Name} }

// String returns "namespace/name".
func (k Key) String() string { return k.Namespace + "/" + k.Name }

// RemoteResolver returns the remote (URL and credentials) of a source, for fetching a commit
// on demand when the store has not polled that source since it started.
type RemoteResolver func(ctx context.Context, key Key) (Remote, error)

// Limits bound what a tree may hold; they apply to Verify and to every fs.FS from Open.
type Limits struct {
	// MaxFiles is the maximum number of files in a tree (Verify) or read from one fs.FS.
	MaxFiles int
	// MaxFileSize is the maximum size of one file, in bytes.
	MaxFileSize int64
	// MaxTotalBytes is the maximum size of all files of a tree, or read from one fs.FS.
	MaxTotalBytes int64
}

// DefaultMaxFileSize is the largest file of a tree a store created with zero Limits reads.
const DefaultMaxFileSize = 10 << 20

// DefaultLimits are the limits of a store created with zero Limits.
func DefaultLimits() Limits {
	return Limits{MaxFiles: 20_000, MaxFileSize: DefaultMaxFileSize, MaxTotalBytes: 512 << 20}
}

// StoreOptions configure a Store.
type StoreOptions struct {
	// Limits; zero fields take DefaultLimits.
	Limits Limits
	// Resolver finds the remote of a source for on-demand fetches; may be set later with
	// SetResolver.
	Resolver RemoteResolver
	// FetchTimeout bounds an on-demand fetch whose Remote has no Timeout, including the wait
	// for another fetch of the same repository; default DefaultFetchTimeout.
	FetchTimeout time.Duration
	// MissingCommitBackoff is how long the store answers CommitNotFoundError without fetching
	// after the remote did not have a commit; it doubles with every failed look up to
	// MaxMissingCommitBackoff. A poll that fetches new objects clears it. Default
	// DefaultMissingCommitBackoff.
	MissingCommitBackoff time.Duration
	// MaxMissingCommitBackoff caps MissingCommitBackoff; default DefaultMaxMissingCommitBackoff.
	MaxMissingCommitBackoff time.Duration
	// MaxRepoBytes bounds the size of one repository after garbage collection (Collect);
	// default DefaultMaxRepoBytes.
	MaxRepoBytes int64
	// CollectPackLimit is the number of packs past which Collect repacks a repository (every
	// fetch adds one); default DefaultCollectPackLimit.
	CollectPackLimit int
	// PackGrace is how long a pack superseded by a repack stays on disk for the readers that
	// still use it; default DefaultPackGrace.
	PackGrace time.Duration
}

// withDefaults fills in the zero fields of o.
func (o StoreOptions) withDefaults() StoreOptions {
	def := DefaultLimits()
	if o.Limits.MaxFiles <= 0 {
		o.Limits.MaxFiles = def.MaxFiles
	}
	if o.Limits.MaxFileSize <= 0 {
		o.Limits.MaxFileSize = def.MaxFileSize
	}
	if o.Limits.MaxTotalBytes <= 0 {
		o.Limits.MaxTotalBytes = def.MaxTotalBytes
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.MissingCommitBackoff <= 0 {
		o.MissingCommitBackoff = DefaultMissingCommitBackoff
	}
	if o.MaxMissingCommitBackoff < o.MissingCommitBackoff {
		o.MaxMissingCommitBackoff = max(DefaultMaxMissingCommitBackoff, o.MissingCommitBackoff)
	}
	if o.MaxRepoBytes <= 0 {
		o.MaxRepoBytes = DefaultMaxRepoBytes
	}
	if o.CollectPackLimit <= 0 {
		o.CollectPackLimit = DefaultCollectPackLimit
	}
	if o.PackGrace <= 0 {
		o.PackGrace = DefaultPackGrace
	}
	return o
}

// Store keeps one bare repository per source under a root directory. It is safe for
// concurrent use: fetches of one source are serialized, readers never block each other for
// long, and every commit once fetched stays readable until a collection (Collect) that was
// not told to keep it.
type Store struct {
	root   string
	limits Limits
	opts   StoreOptions
	now    func() time.Time

	mu       sync.Mutex
	entries  map[Key]*entry
	resolver RemoteResolver
}

// entry is the in-memory state of one source.
type entry struct {
	// write serializes fetches, re-initialization and deletion of the repository.
	write writeLock

	mu     sync.Mutex
	handle *handle
	remote *Remote
	// missing remembers the commits the remote did not have, by hash.
	missing map[string]*missingCommit
	// superseded are the packs (paths without .pack) that a collection replaced, with the time
	// it did; they wait for PackGrace before they are deleted.
	superseded map[string]time.Time
}

// handle is an open repository; mu serializes every read of its object storage.
// Note: go-git's object storage is not safe for concurrent use, and objects are immutable,
// so a handle stays valid for reading the commits it saw even while a fetch adds packs.
type handle struct {
	mu   sync.Mutex
	repo *git.Repository
}

// NewStore returns a store rooted at root (created if needed). Repositories already under
// root (from an earlier process) are reused.
func NewStore(root string, opts StoreOptions) (*Store, error) {
	if err := os.MkdirAll(root, 0o750); err != nil {
		return nil, fmt.Errorf("creating storage path: %w", err)
	}
	opts = opts.withDefaults()
	return &Store{root: root, limits: opts.Limits, opts: opts, now: time.Now, entries: map[Key]*entry{},
		resolver: opts.Resolver}, nil
}

// Limits returns the store's limits.
func (s *Store) Limits() Limits { return s.limits }

// SetResolver sets the function that finds a source's remote for on-demand fetches.
func (s *Store) SetResolver(r RemoteResolver) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolver = r
}

// Delete removes the repository of key from disk (on GitSource deletion).
func (s *Store) Delete(key Key) error {
	e := s.entry(key)
	if err := e.write.lock(context.Background()); err != nil {
		return err
	}
	defer e.write.unlock()
	s.mu.Lock()
	delete(s.entries, key)
	s.mu.Unlock()
	forgetPolls(key)
	if err := os.RemoveAll(s.dir(key)); err != nil {
		return fmt.Errorf("deleting repository of %s: %w", key, err)
	}
	return nil
}

// dir returns the repository directory of key.
func (s *Store) dir(key Key) string {
	return filepath.Join(s.root, key.Namespace, key.Name+".git")
}

// entry returns the in-memory state of key, creating it.
func (s *Store) entry(key Key) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		e = &entry{write: newWriteLock()}
		s.entries[key] = e
	}
	return e
}

// remoteFor returns the last remote used for key, or asks the resolver.
func (s *Store) remoteFor(ctx context.Context, key Key, e *entry) (Remote, error) {
	e.mu.Lock()
	r := e.remote
	e.mu.Unlock()
	if r != nil {
		return *r, nil
	}
	s.mu.Lock()
	resolve := s.resolver
	s.mu.Unlock()
	if resolve == nil {
		return Remote{}, fmt.Errorf("source %s has not been polled yet and no resolver is set", key)
	}
	return resolve(ctx, key)
}

// openHandle returns the current handle of key, opening the repository if it exists. It
// returns (nil, nil) when there is no repository yet. A handle whose directory was deleted
// (by hand, or a volume lost) is dropped: its packs are gone.
func (s *Store) openHandle(key Key, e *entry) (*handle, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.handle != nil {
		if _, err := os.Stat(s.dir(key)); err == nil {
			return e.handle, nil
		}
		e.handle = nil
	}
	repo, err := git.PlainOpen(s.dir(key))
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening repository of %s: %w", key, err)
	}
	e.handle = &handle{repo: repo}
	return e.handle, nil
}

// reset drops the cached handle so that the next reader sees newly fetched packs.
func (e *entry) reset(remote *Remote) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.handle = nil
	if remote != nil {
		r := *remote
		e.remote = &r
	}
}

// dropHandle drops h if it is still the entry's handle, so that the next reader reopens the
// repository; a newer handle is kept.
func (e *entry) dropHandle(h *handle) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.handle == h {
		e.handle = nil
	}
}

// Keys returns the keys of the repositories on disk.
func (s *Store) Keys() ([]Key, error) {
	namespaces, err := os.ReadDir(s.root)
	if err != nil {
		return nil, fmt.Errorf("listing storage path: %w", err)
	}
	var keys []Key
	for _, ns := range namespaces {
		if !ns.IsDir() {
			continue
		}
		repos, err := os.ReadDir(filepath.Join(s.root, ns.Name()))
		if err != nil {
			return nil, fmt.Errorf("listing storage path: %w", err)
		}
		for _, r := range repos {
			if name, ok := strings.CutSuffix(r.Name(), ".git"); ok && r.IsDir() {
				keys = append(keys, KeyFor(ns.Name(), name))
			}
		}
	}
	return keys, nil
}

// Prune deletes the repositories whose key keep rejects.
func (s *Store) Prune(keep func(Key) bool) error {
	keys, err := s.Keys()
	if err != nil {
		return err
	}
	var errs []error
	for _, k := range keys {
		if !keep(k) {
			errs = append(errs, s.Delete(k))
		}
	}
	return errors.Join(errs...)
}
