package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// Limits on what Load reads and renders; a package beyond them fails with RuleLimit.
const (
	// MaxFiles is the number of files Load reads from a package directory.
	MaxFiles = 5000
	// MaxFileSize is the size of one file, and of one template's output.
	MaxFileSize = 4 << 20
	// MaxPackageSize is the total size of the files read plus the templates' output.
	MaxPackageSize = 64 << 20
	// MaxObjects is the number of objects in a package.
	MaxObjects = 10000
)

// Well-known file names at the root of a package directory.
const (
	manifestFile      = "manifest.yaml"
	manifestFileAlt   = "manifest.yml"
	pkoLockFile       = "manifest.lock.yaml"
	ignoreFile        = ".convoyignore"
	templateExtension = ".gotmpl"
)

// kustomizationFiles are the names kustomize reads in a directory.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// packageFiles holds the files of a package directory that Load reads.
type packageFiles struct {
	// data maps a path relative to the package directory to the file's content.
	data map[string][]byte
	// paths lists the keys of data in lexical order.
	paths []string
	// size is the total size read so far, template output included.
	size int
}

// readPackage reads a package directory. Hidden files and directories and those .convoyignore
// lists are skipped; unless all is set only YAML files and templates are read. It returns false
// when the directory cannot be read or exceeds a limit, and there is no point going on.
func readPackage(fsys fs.FS, dir string, all bool, errs *errorList) (*packageFiles, bool) {
	pf := &packageFiles{data: map[string][]byte{}}
	ignore := readIgnoreFile(fsys, dir, errs)
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := relPath(dir, p)
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || ignore.matches(rel, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || (!all && !isObjectFile(rel) && !isTemplate(rel)) {
			return nil
		}
		return pf.read(fsys, p, rel, d, errs)
	})
	if errors.Is(err, errStopWalk) {
		return nil, false
	}
	if err != nil {
		errs.add("", 0, RuleMissingManifest, "cannot read the package directory %q: %v", dir, err)
		return nil, false
	}
	slices.Sort(pf.paths)
	return pf, true
}

// errStopWalk stops reading a package that exceeds a limit.
var errStopWalk = errors.New("limit exceeded")

// read reads one file, enforcing the limits.
func (pf *packageFiles) read(fsys fs.FS, p, rel string, d fs.DirEntry, errs *errorList) error {
	if !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
		return nil
	}
	if len(pf.paths) >= MaxFiles {
		errs.add(rel, 0, RuleLimit, "the package has more than %d files", MaxFiles)
		return errStopWalk
	}
	if info, err := d.Info(); err == nil && d.Type().IsRegular() && info.Size() > MaxFileSize {
		errs.add(rel, 0, RuleLimit, "file is larger than %d bytes", MaxFileSize)
		return nil
	}
	data, err := fs.ReadFile(fsys, p)
	var escape *SymlinkEscapeError
	switch {
	case errors.As(err, &escape):
		errs.add(rel, 0, RuleSymlinkOutside, "%v", escape)
		return nil
	case err != nil:
		errs.add(rel, 0, RuleInvalidYAML, "cannot read: %v", err)
		return nil
	}
	if len(data) > MaxFileSize {
		errs.add(rel, 0, RuleLimit, "file is larger than %d bytes", MaxFileSize)
		return nil
	}
	if !pf.grow(len(data)) {
		errs.add(rel, 0, RuleLimit, "the package is larger than %d bytes", MaxPackageSize)
		return errStopWalk
	}
	pf.data[rel] = data
	pf.paths = append(pf.paths, rel)
	return nil
}

// hasTemplates reports whether any file read is a Go template.
func (pf *packageFiles) hasTemplates() bool {
	return slices.ContainsFunc(pf.paths, isTemplate)
}

// grow accounts for n more bytes and reports whether the package stays within MaxPackageSize.
func (pf *packageFiles) grow(n int) bool {
	pf.size += n
	return pf.size <= MaxPackageSize
}

// relPath returns p relative to dir (both slash-separated fs paths).
func relPath(dir, p string) string {
	if dir == "." {
		return p
	}
	if p == dir {
		return "."
	}
	return strings.TrimPrefix(p, dir+"/")
}

// isObjectFile reports whether a path names a YAML file.
func isObjectFile(p string) bool {
	return strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")
}

// isTemplate reports whether a path names a Go template.
func isTemplate(p string) bool {
	return strings.HasSuffix(p, templateExtension)
}

// isRootFile reports whether p is one of the given names at the package root.
func isRootFile(p string, names ...string) bool {
	return slices.Contains(names, p)
}

// isKustomization reports whether p is a kustomization file, at any depth.
func isKustomization(p string) bool {
	return slices.Contains(kustomizationFiles, path.Base(p))
}

// hasRootKustomization reports whether the package directory holds a kustomization file, or a
// template that renders to one.
func hasRootKustomization(fsys fs.FS, dir string) bool {
	for _, name := range kustomizationFiles {
		for _, candidate := range []string{name, name + templateExtension} {
			if _, err := fs.Stat(fsys, path.Join(dir, candidate)); err == nil {
				return true
			}
		}
	}
	return false
}

// ignoreList is the parsed .convoyignore: gitignore-like patterns without negation. A pattern
// with a slash (other than a trailing one) matches the path from the package root, one without
// matches any file or directory name; a trailing slash matches directories only.
type ignoreList []ignorePattern

// ignorePattern is one line of .convoyignore.
type ignorePattern struct {
	glob     string
	anchored bool
	dirOnly  bool
}

// readIgnoreFile reads .convoyignore at the package root, if any.
func readIgnoreFile(fsys fs.FS, dir string, errs *errorList) ignoreList {
	data, err := fs.ReadFile(fsys, path.Join(dir, ignoreFile))
	if err != nil {
		return nil
	}
	var list ignoreList
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "!") {
			errs.add(ignoreFile, n, RuleUnsupported, "negated patterns are not supported")
			continue
		}
		p := ignorePattern{dirOnly: strings.HasSuffix(line, "/")}
		line = strings.TrimSuffix(line, "/")
		p.anchored = strings.Contains(line, "/")
		p.glob = strings.TrimPrefix(line, "/")
		if _, err := path.Match(p.glob, ""); err != nil {
			errs.add(ignoreFile, n, RuleInvalidManifest, "bad pattern %q: %v", line, err)
			continue
		}
		list = append(list, p)
	}
	return list
}

// matches reports whether a path relative to the package root is ignored.
func (l ignoreList) matches(rel string, isDir bool) bool {
	for _, p := range l {
		if p.dirOnly && !isDir {
			continue
		}
		subject := path.Base(rel)
		if p.anchored {
			subject = rel
		}
		if ok, _ := path.Match(p.glob, subject); ok {
			return true
		}
	}
	return false
}
