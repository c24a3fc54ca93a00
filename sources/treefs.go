package sources

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// treeFS is an fs.FS over one commit's tree in a stored repository.
type treeFS struct {
	h      *handle
	root   *object.Tree
	limits Limits
	// key and commit name the tree in errors.
	key    Key
	commit string
	// stale drops h from its entry, so that the next Open reopens the repository.
	stale func()

	// mu guards the read accounting and fault.
	mu    sync.Mutex
	files map[string]bool
	total int64
	fault *StoreReadError
}

var (
	_ fs.ReadFileFS = (*treeFS)(nil)
	_ fs.ReadDirFS  = (*treeFS)(nil)
	_ fs.ReadLinkFS = (*treeFS)(nil)
)

func newTreeFS(h *handle, root *object.Tree, limits Limits) *treeFS {
	return &treeFS{h: h, root: root, limits: limits, files: map[string]bool{}, stale: func() {}}
}

// Fault returns the first object the tree refers to that a read could not load from the
// store, nil if none. A reader that swallows a read error (an optional file it could not
// stat) asks it to learn that what it read is incomplete, and must not use it.
func (t *treeFS) Fault() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fault == nil {
		return nil
	}
	return t.fault
}

// storeFailed records err, a failure to load an object the tree refers to, as the tree's
// fault, and drops the repository handle: its packs may have been deleted or replaced.
func (t *treeFS) storeFailed(err error) error {
	sr := &StoreReadError{Key: t.key, Commit: t.commit, Err: err}
	t.mu.Lock()
	if t.fault == nil {
		t.fault = sr
	}
	t.mu.Unlock()
	t.stale()
	return sr
}

// node is a resolved path: a directory (tree set) or a file.
type node struct {
	name string
	mode filemode.FileMode
	hash plumbing.Hash
	tree *object.Tree
}

// Open implements fs.FS; symlinks are followed inside the tree only.
func (t *treeFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	n, err := t.lookup(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if n.tree != nil {
		entries, err := t.dirEntries(n.tree)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &dirFile{info: fileInfo{name: n.name, mode: fs.ModeDir | 0o555}, entries: entries}, nil
	}
	data, err := t.readBlob(name, n.hash)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &file{Reader: bytes.NewReader(data), info: fileInfo{name: n.name, size: int64(len(data)), mode: fileMode(n.mode)}}, nil
}

// ReadFile implements fs.ReadFileFS.
func (t *treeFS) ReadFile(name string) ([]byte, error) {
	f, err := t.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if ff, ok := f.(*file); ok {
		return io.ReadAll(ff.Reader)
	}
	return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
}

// ReadDir implements fs.ReadDirFS.
func (t *treeFS) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := t.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, ok := f.(*dirFile)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	return d.ReadDir(-1)
}

// Lstat implements fs.ReadLinkFS: it describes name without following it when it is a
// symlink (the directories leading to it are followed).
func (t *treeFS) Lstat(name string) (fs.FileInfo, error) {
	e, err := t.entry("lstat", name)
	if err != nil {
		return nil, err
	}
	info := fileInfo{name: e.Name, mode: fileMode(e.Mode)}
	if e.Mode != filemode.Dir {
		t.h.mu.Lock()
		info.size, err = t.blobSize(e.Hash)
		t.h.mu.Unlock()
	}
	return info, err
}

// ReadLink implements fs.ReadLinkFS: it returns the target of the symlink name as written.
func (t *treeFS) ReadLink(name string) (string, error) {
	e, err := t.entry("readlink", name)
	if err != nil {
		return "", err
	}
	if e.Mode != filemode.Symlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	target, err := t.readSymlink(name, e.Hash)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	return target, nil
}

// entry returns the tree entry of name, without following it when it is a symlink.
func (t *treeFS) entry(op, name string) (*object.TreeEntry, error) {
	if !fs.ValidPath(name) || name == "." {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	t.h.mu.Lock()
	defer t.h.mu.Unlock()
	dir, err := t.lookup(path.Dir(name))
	if err == nil && dir.tree == nil {
		err = fs.ErrNotExist
	}
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	e, err := dir.tree.FindEntry(path.Base(name))
	if err != nil || e.Mode == filemode.Submodule {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return e, nil
}

// lookup resolves name, following symlinks lexically from the root of the tree. Caller holds
// h.mu.
func (t *treeFS) lookup(name string) (node, error) {
	parts := splitPath(name)
	cur, dir := t.root, "."
	for i, hops := 0, 0; i < len(parts); i++ {
		e, err := cur.FindEntry(parts[i])
		if err != nil {
			return node{}, fs.ErrNotExist
		}
		p := path.Join(dir, parts[i])
		last := i == len(parts)-1
		switch {
		case e.Mode == filemode.Symlink:
			if hops++; hops > maxSymlinkHops {
				return node{}, fmt.Errorf("too many levels of symbolic links")
			}
			joined, err := t.symlinkTarget(p, e.Hash)
			if err != nil {
				return node{}, err
			}
			parts = append(splitPath(joined), parts[i+1:]...)
			cur, dir, i = t.root, ".", -1
		case e.Mode == filemode.Dir:
			if cur, err = t.h.repo.TreeObject(e.Hash); err != nil {
				return node{}, t.storeFailed(fmt.Errorf("reading tree %q: %w", p, err))
			}
			dir = p
		case e.Mode.IsFile() && last:
			return node{name: parts[i], mode: e.Mode, hash: e.Hash}, nil
		default:
			return node{}, fs.ErrNotExist
		}
	}
	return node{name: path.Base(dir), mode: filemode.Dir, tree: cur}, nil
}

// readBlob reads a file, enforcing the limits. Caller holds h.mu.
func (t *treeFS) readBlob(name string, h plumbing.Hash) ([]byte, error) {
	blob, err := t.h.repo.BlobObject(h)
	if err != nil {
		return nil, t.storeFailed(fmt.Errorf("reading blob %q: %w", name, err))
	}
	if blob.Size > t.limits.MaxFileSize {
		return nil, &LimitError{Limit: "file size", Max: t.limits.MaxFileSize, Path: name}
	}
	if err := t.account(name, blob.Size); err != nil {
		return nil, err
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, t.storeFailed(fmt.Errorf("reading blob %q: %w", name, err))
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, t.storeFailed(fmt.Errorf("reading blob %q: %w", name, err))
	}
	return data, nil
}

// account counts a file read through this FS against the limits; re-reading a file is free.
func (t *treeFS) account(name string, size int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.files[name] {
		return nil
	}
	if len(t.files)+1 > t.limits.MaxFiles {
		return &LimitError{Limit: "files", Max: int64(t.limits.MaxFiles)}
	}
	if t.total+size > t.limits.MaxTotalBytes {
		return &LimitError{Limit: "total size", Max: t.limits.MaxTotalBytes}
	}
	t.files[name] = true
	t.total += size
	return nil
}

// dirEntries lists a tree, sorted by name. Caller holds h.mu.
func (t *treeFS) dirEntries(tree *object.Tree) ([]fs.DirEntry, error) {
	out := make([]fs.DirEntry, 0, len(tree.Entries))
	for _, e := range tree.Entries {
		if e.Mode == filemode.Submodule {
			continue
		}
		info := fileInfo{name: e.Name, mode: fileMode(e.Mode)}
		if e.Mode != filemode.Dir {
			size, err := t.blobSize(e.Hash)
			if err != nil {
				return nil, err
			}
			info.size = size
		}
		out = append(out, fs.FileInfoToDirEntry(info))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// splitPath splits a valid fs path into components ("." has none).
func splitPath(p string) []string {
	if p == "." || p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// fileMode converts a git mode.
func fileMode(m filemode.FileMode) fs.FileMode {
	switch m {
	case filemode.Dir:
		return fs.ModeDir | 0o555
	case filemode.Symlink:
		return fs.ModeSymlink | 0o777
	case filemode.Executable:
		return 0o555
	}
	return 0o444
}

// fileInfo is the fs.FileInfo of a tree entry.
type fileInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return i.mode }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fileInfo) Sys() any           { return nil }

// file is an open regular file, read into memory at Open.
type file struct {
	*bytes.Reader
	info fileInfo
}

func (f *file) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *file) Close() error               { return nil }

// dirFile is an open directory.
type dirFile struct {
	info    fileInfo
	entries []fs.DirEntry
	offset  int
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dirFile) Close() error               { return nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errors.New("is a directory")}
}

// ReadDir implements fs.ReadDirFile.
func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.offset:]
	if n <= 0 {
		d.offset = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if n > len(rest) {
		n = len(rest)
	}
	d.offset += n
	return rest[:n], nil
}
