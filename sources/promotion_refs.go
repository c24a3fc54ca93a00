package sources

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// PromotionRefPrefix is the namespace of the refs on which management clusters publish their
// promotion records, in the package repository itself:
// refs/convoy/promotion/<sector>/<management cluster>/<key>. Each points at a commit of its own
// (no parent, not on any branch) whose tree holds one file, PromotionRecordFile.
const PromotionRefPrefix = "refs/convoy/promotion/"

// PromotionRecordFile is the file of a promotion ref's tree that holds the record.
const PromotionRecordFile = "record.json"

// maxPromotionRefs bounds the promotion refs a poll fetches: a fleet of 50 management clusters
// with 100 add-ons each fits.
const maxPromotionRefs = 5000

// promotionRefSpec fetches every promotion ref, replacing what moved.
var promotionRefSpec = config.RefSpec("+" + PromotionRefPrefix + "*:" + PromotionRefPrefix + "*")

// PromotionRef returns the ref of one record. The names must be DNS labels (the caller checks).
func PromotionRef(sector, managementCluster, key string) string {
	return PromotionRefPrefix + sector + "/" + managementCluster + "/" + key
}

// syncPromotionRefs brings the promotion refs of repo to what the remote listed: it fetches
// only when one was added or moved (a record commit and its one blob each), and deletes those
// the remote no longer has. It returns the digest of the refs, which changes when one does.
func syncPromotionRefs(ctx context.Context, repo *git.Repository, remote Remote, listed []*plumbing.Reference) (string, error) {
	want := map[plumbing.ReferenceName]plumbing.Hash{}
	for _, ref := range listed {
		if isPromotionRef(ref) && !strings.HasSuffix(ref.Name().String(), "^{}") {
			want[ref.Name()] = ref.Hash()
		}
	}
	if len(want) > maxPromotionRefs {
		return "", fmt.Errorf("the remote has %d promotion refs, more than %d", len(want), maxPromotionRefs)
	}
	have, err := localPromotionRefs(repo)
	if err != nil {
		return "", err
	}
	// Note: refs the remote deleted go first: a stale ref could stand where a new one must be
	// written (refs/convoy/promotion/a beside refs/convoy/promotion/a/b).
	for name := range have {
		if _, ok := want[name]; !ok {
			if err := repo.Storer.RemoveReference(name); err != nil {
				return "", fmt.Errorf("removing promotion ref %s: %w", name, err)
			}
		}
	}
	for name, h := range want {
		if have[name] != h {
			if err := fetch(ctx, repo, remote, promotionRefSpec); err != nil {
				return "", fmt.Errorf("fetching promotion refs: %w", err)
			}
			break
		}
	}
	return promotionDigest(want), nil
}

// isPromotionRef reports whether ref is a hash ref under PromotionRefPrefix.
func isPromotionRef(ref *plumbing.Reference) bool {
	return strings.HasPrefix(ref.Name().String(), PromotionRefPrefix) && ref.Type() == plumbing.HashReference
}

// localPromotionRefs returns the promotion refs stored in repo.
func localPromotionRefs(repo *git.Repository) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	iter, err := repo.References()
	if err != nil {
		return nil, fmt.Errorf("listing refs: %w", err)
	}
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if isPromotionRef(ref) {
			out[ref.Name()] = ref.Hash()
		}
		return nil
	})
	return out, err
}

// promotionDigest returns a digest of the refs' names and hashes; "" when there are none.
func promotionDigest(refs map[plumbing.ReferenceName]plumbing.Hash) string {
	if len(refs) == 0 {
		return ""
	}
	lines := make([]string, 0, len(refs))
	for name, h := range refs {
		lines = append(lines, name.String()+" "+h.String())
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PromotionRecords returns the records of the promotion refs the last poll of key fetched, by
// the ref's path below PromotionRefPrefix ("<sector>/<management cluster>/<key>"), each at most
// maxBytes: those of paths, or every one when paths is nil. A wanted record that cannot be read
// is an error: a reader must not mistake it for a management cluster that has not reported. A
// ref nobody asked for is not read, so that a bad one holds only its readers.
func (s *Store) PromotionRecords(key Key, maxBytes int64, paths []string) (map[string][]byte, error) {
	h, err := s.openHandle(key, s.entry(key))
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("%s has not been polled yet", key)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	refs, err := localPromotionRefs(h.repo)
	if err != nil {
		return nil, err
	}
	wanted := map[string]bool{}
	for _, p := range paths {
		wanted[p] = true
	}
	out := make(map[string][]byte, len(refs))
	for name, hash := range refs {
		if paths != nil && !wanted[strings.TrimPrefix(name.String(), PromotionRefPrefix)] {
			continue
		}
		data, err := readRecordBlob(h.repo, hash, maxBytes)
		if err != nil {
			return nil, fmt.Errorf("promotion ref %s: %w", name, err)
		}
		out[strings.TrimPrefix(name.String(), PromotionRefPrefix)] = data
	}
	return out, nil
}

// readRecordBlob reads PromotionRecordFile from the tree of commit hash, which must be a
// record commit: no parent, a tree of that one file, each object of a bounded size.
func readRecordBlob(repo *git.Repository, hash plumbing.Hash, maxBytes int64) ([]byte, error) {
	if obj, err := repo.Storer.EncodedObject(plumbing.CommitObject, hash); err == nil && obj.Size() > maxBytes {
		return nil, fmt.Errorf("its commit is %d bytes, more than %d", obj.Size(), maxBytes)
	}
	commit, err := repo.CommitObject(hash)
	if err != nil {
		return nil, fmt.Errorf("reading its commit: %w", err)
	}
	if len(commit.ParentHashes) > 0 {
		return nil, errors.New("its commit has a parent: a record commit has none")
	}
	if obj, err := repo.Storer.EncodedObject(plumbing.TreeObject, commit.TreeHash); err == nil && obj.Size() > maxBytes {
		return nil, fmt.Errorf("its tree is %d bytes, more than %d", obj.Size(), maxBytes)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("reading its tree: %w", err)
	}
	f, err := tree.File(PromotionRecordFile)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", PromotionRecordFile, err)
	}
	if f.Size > maxBytes {
		return nil, fmt.Errorf("%s is %d bytes, more than %d", PromotionRecordFile, f.Size, maxBytes)
	}
	r, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	return io.ReadAll(io.LimitReader(r, maxBytes))
}

// PushPromotionRecord publishes data as the record of ref on remote: a commit of its own, with
// no parent, whose tree holds PromotionRecordFile, pushed over whatever ref held before (the
// publisher is the ref's only writer). The credentials of remote never appear in the error.
func PushPromotionRecord(ctx context.Context, remote Remote, ref string, data []byte, at time.Time) error {
	if !strings.HasPrefix(ref, PromotionRefPrefix) {
		return fmt.Errorf("%s is not a promotion ref", ref)
	}
	return remote.Redact(pushRecord(ctx, remote, plumbing.ReferenceName(ref), data, at))
}

// pushRecord is PushPromotionRecord without the redaction.
func pushRecord(ctx context.Context, remote Remote, ref plumbing.ReferenceName, data []byte, at time.Time) error {
	repo, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		return err
	}
	commit, err := recordCommit(repo, data, at)
	if err != nil {
		return err
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference(ref, commit)); err != nil {
		return err
	}
	auth, err := remote.Auth.transportAuth(remote.URL)
	if err != nil {
		return err
	}
	r, err := repo.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{remote.URL}})
	if err != nil {
		return err
	}
	err = r.PushContext(ctx, &git.PushOptions{RemoteName: remoteName, Auth: auth, CABundle: remote.Auth.caBundle(),
		RefSpecs: []config.RefSpec{config.RefSpec("+" + ref + ":" + ref)}, Force: true})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}

// recordCommit writes the blob, the tree and the commit of a record into repo.
func recordCommit(repo *git.Repository, data []byte, at time.Time) (plumbing.Hash, error) {
	blob := repo.Storer.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	w, err := blob.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	blobHash, err := repo.Storer.SetEncodedObject(blob)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tree := &object.Tree{Entries: []object.TreeEntry{{Name: PromotionRecordFile, Mode: 0o100644, Hash: blobHash}}}
	treeHash, err := storeObject(repo, tree)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sig := object.Signature{Name: "convoy", Email: "convoy@localhost", When: at}
	return storeObject(repo, &object.Commit{Author: sig, Committer: sig, TreeHash: treeHash,
		Message: "convoy promotion record\n"})
}

// storeObject encodes o into repo's storage.
func storeObject(repo *git.Repository, o interface {
	Encode(plumbing.EncodedObject) error
}) (plumbing.Hash, error) {
	obj := repo.Storer.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return repo.Storer.SetEncodedObject(obj)
}

// Remote returns the remote of key with its credentials, as the last poll used them (else as
// the resolver finds them): a publisher pushes promotion records with them.
func (s *Store) Remote(ctx context.Context, key Key) (Remote, error) {
	return s.remoteFor(ctx, key, s.entry(key))
}

// FetchPromotionRecord reads the record of ref straight from the remote (a fetch of that one
// ref into memory), at most maxBytes; false when the remote has no such ref. A publisher merges
// into it before its first push, so that neither a restart nor a store behind the remote
// loses what it published. The credentials of remote never appear in the error.
func FetchPromotionRecord(ctx context.Context, remote Remote, ref string, maxBytes int64) ([]byte, bool, error) {
	data, ok, err := fetchRecord(ctx, remote, plumbing.ReferenceName(ref), maxBytes)
	return data, ok, remote.Redact(err)
}

// fetchRecord is FetchPromotionRecord without the redaction.
func fetchRecord(ctx context.Context, remote Remote, ref plumbing.ReferenceName, maxBytes int64) ([]byte, bool, error) {
	refs, err := listRemote(ctx, remote)
	if err != nil {
		return nil, false, err
	}
	found := false
	for _, r := range refs {
		found = found || (r.Name() == ref && r.Type() == plumbing.HashReference)
	}
	if !found {
		return nil, false, nil
	}
	repo, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		return nil, false, err
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{remote.URL}}); err != nil {
		return nil, false, err
	}
	auth, err := remote.Auth.transportAuth(remote.URL)
	if err != nil {
		return nil, false, err
	}
	// Note: one commit deep: a ref pointed at a long history must not fill the memory.
	err = repo.FetchContext(ctx, &git.FetchOptions{RemoteName: remoteName, RefSpecs: []config.RefSpec{config.RefSpec("+" + ref + ":" + ref)},
		Auth: auth, CABundle: remote.Auth.caBundle(), Tags: git.NoTags, Force: true, Depth: 1})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, false, fmt.Errorf("fetching %s: %w", ref, err)
	}
	r, err := repo.Reference(ref, false)
	if err != nil {
		return nil, false, err
	}
	data, err := readRecordBlob(repo, r.Hash(), maxBytes)
	return data, true, err
}
