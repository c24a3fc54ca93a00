package manifests

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// maxSymlinkHops bounds symlink chains, like the kernel's ELOOP.
const maxSymlinkHops = 40

// SymlinkEscapeError says that a symlink leads outside the package directory: an absolute
// target, or one whose ".." climbs above the directory.
type SymlinkEscapeError struct {
	// Link is the path of the symlink relative to the package directory.
	Link string
	// Target is the symlink's target, as written.
	Target string
}

// Error implements error.
func (e *SymlinkEscapeError) Error() string {
	return fmt.Sprintf("symlink %s -> %s leads outside the package directory", e.Link, e.Target)
}

// confinedFS resolves every symlink of the paths it opens itself, component by component from
// the package directory, and refuses those that lead outside it; what it passes to the
// underlying FS has no symlink left. It is the one confinement of package reads: whatever
// serves the files (a Git commit in the controller, a directory in `convoy render`) and
// whatever that confines symlinks to (the repository, or nothing), a package sees only its own
// directory.
type confinedFS struct {
	fsys fs.ReadLinkFS
	dir  string
	// real caches directories (relative to dir) known not to be symlinks.
	real map[string]bool
}

var (
	_ fs.ReadDirFS  = (*confinedFS)(nil)
	_ fs.ReadFileFS = (*confinedFS)(nil)
	_ fs.StatFS     = (*confinedFS)(nil)
)

// confine returns fsys with symlinks confined to dir; an FS that cannot report symlinks (no
// fs.ReadLinkFS) has none to follow and is returned as it is.
func confine(fsys fs.FS, dir string) fs.FS {
	rl, ok := fsys.(fs.ReadLinkFS)
	if !ok {
		return fsys
	}
	return &confinedFS{fsys: rl, dir: dir, real: map[string]bool{}}
}

// Open implements fs.FS.
func (c *confinedFS) Open(name string) (fs.File, error) {
	p, err := c.resolve("open", name)
	if err != nil {
		return nil, err
	}
	return c.fsys.Open(p)
}

// ReadDir implements fs.ReadDirFS.
func (c *confinedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := c.resolve("readdir", name)
	if err != nil {
		return nil, err
	}
	return fs.ReadDir(c.fsys, p)
}

// ReadFile implements fs.ReadFileFS.
func (c *confinedFS) ReadFile(name string) ([]byte, error) {
	p, err := c.resolve("read", name)
	if err != nil {
		return nil, err
	}
	return fs.ReadFile(c.fsys, p)
}

// Stat implements fs.StatFS.
func (c *confinedFS) Stat(name string) (fs.FileInfo, error) {
	p, err := c.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	return fs.Stat(c.fsys, p)
}

// resolve returns name with every symlink resolved, refusing names outside the package
// directory and symlinks that lead out of it.
func (c *confinedFS) resolve(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	rel := relPath(c.dir, name)
	if c.dir != "." && rel == name && name != c.dir {
		return "", &fs.PathError{Op: op, Path: name, Err: errors.New("outside the package directory")}
	}
	todo := splitComponents(rel)
	var done []string
	for hops := 0; len(todo) > 0; {
		part := todo[0]
		todo = todo[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", &fs.PathError{Op: op, Path: name, Err: errors.New("outside the package directory")}
			}
			done = done[:len(done)-1]
			continue
		}
		next := path.Join(append(done, part)...)
		if c.real[next] {
			done = append(done, part)
			continue
		}
		full := path.Join(c.dir, next)
		info, err := c.fsys.Lstat(full)
		if err != nil {
			return "", err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			if info.IsDir() {
				c.real[next] = true
			}
			done = append(done, part)
			continue
		}
		if hops++; hops > maxSymlinkHops {
			return "", &fs.PathError{Op: op, Path: name, Err: errors.New("too many levels of symbolic links")}
		}
		target, err := c.fsys.ReadLink(full)
		if err != nil {
			return "", err
		}
		if escapes(done, target) {
			return "", &fs.PathError{Op: op, Path: name, Err: &SymlinkEscapeError{Link: next, Target: target}}
		}
		todo = append(splitComponents(target), todo...)
	}
	return path.Join(c.dir, path.Join(done...)), nil
}

// escapes reports whether a symlink target, relative to the directory done, leaves the package
// directory: it is absolute, or a ".." climbs above the directory at some point.
func escapes(done []string, target string) bool {
	if path.IsAbs(target) || strings.HasPrefix(target, "/") {
		return true
	}
	depth := len(done)
	for _, part := range splitComponents(target) {
		switch part {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// splitComponents splits a slash-separated path into its components.
func splitComponents(p string) []string {
	if p == "" || p == "." {
		return nil
	}
	return strings.Split(p, "/")
}
