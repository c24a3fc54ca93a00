package gitserver

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	pathpkg "path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// File is one change of a commit.
type File struct {
	// Path inside the repository, slash-separated.
	Path string
	// Content of the file, or the target of a symlink.
	Content string
	// Symlink makes the entry a symbolic link to Content.
	Symlink bool
	// Delete removes Path.
	Delete bool
}

// Files turns a path → content map into changes, sorted by path.
func Files(m map[string]string) []File {
	out := make([]File, 0, len(m))
	for p, c := range m {
		out = append(out, File{Path: p, Content: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Repo is a bare repository served by a Server. Its methods write with git plumbing commands,
// so no work tree is needed; they are safe for concurrent use.
type Repo struct {
	// Name of the repository, e.g. "addons"; it is served as "<Name>.git".
	Name string
	// Dir is the bare repository's directory.
	Dir string

	mu    sync.Mutex
	clock int
}

// initRepo creates a bare repository at dir.
func initRepo(name, dir string) (*Repo, error) {
	if _, err := git("", nil, "init", "--quiet", "--bare", "--initial-branch=main", dir); err != nil {
		return nil, err
	}
	r := &Repo{Name: name, Dir: dir}
	// Note: like GitHub, allow fetching any reachable commit by its hash.
	if _, err := r.git(nil, "config", "uploadpack.allowReachableSHA1InWant", "true"); err != nil {
		return nil, err
	}
	return r, nil
}

// Commit commits files (added or replaced) on top of branch, creating the branch if needed,
// and returns the new commit hash.
func (r *Repo) Commit(branch, message string, files map[string]string) (string, error) {
	return r.CommitFiles(branch, message, Files(files)...)
}

// CommitFiles commits changes on top of branch and returns the new commit hash.
func (r *Repo) CommitFiles(branch, message string, changes ...File) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	parent, _ := r.git(nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}")
	index := filepath.Join(r.Dir, "convoy-test-index")
	defer os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index}
	if parent != "" {
		if _, err := r.gitEnv(env, nil, "read-tree", parent); err != nil {
			return "", err
		}
	} else if _, err := r.gitEnv(env, nil, "read-tree", "--empty"); err != nil {
		return "", err
	}
	if err := r.updateIndex(env, changes); err != nil {
		return "", err
	}
	tree, err := r.gitEnv(env, nil, "write-tree")
	if err != nil {
		return "", err
	}
	return r.commitTree(branch, parent, tree, message)
}

// updateIndex writes the blobs of changes and stages them in the index named by env.
func (r *Repo) updateIndex(env []string, changes []File) error {
	var info bytes.Buffer
	for _, c := range changes {
		if c.Delete {
			fmt.Fprintf(&info, "0 %s\t%s\n", strings.Repeat("0", 40), c.Path)
			continue
		}
		blob, err := r.git(strings.NewReader(c.Content), "hash-object", "-w", "--stdin")
		if err != nil {
			return err
		}
		mode := "100644"
		if c.Symlink {
			mode = "120000"
		}
		fmt.Fprintf(&info, "%s %s\t%s\n", mode, blob, c.Path)
	}
	_, err := r.gitEnv(env, &info, "update-index", "--index-info")
	return err
}

// commitTree creates a commit of tree on parent and moves branch to it.
func (r *Repo) commitTree(branch, parent, tree, message string) (string, error) {
	args := []string{"commit-tree", tree, "-m", message}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	r.clock++
	date := fmt.Sprintf("%d +0000", 1700000000+r.clock)
	env := []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}
	commit, err := r.gitEnv(env, nil, args...)
	if err != nil {
		return "", err
	}
	if _, err := r.git(nil, "update-ref", "refs/heads/"+branch, commit); err != nil {
		return "", err
	}
	return commit, nil
}

// Tag creates or moves (force) the lightweight tag name to commit.
func (r *Repo) Tag(name, commit string) error {
	_, err := r.git(nil, "update-ref", "refs/tags/"+name, commit)
	return err
}

// AnnotatedTag creates or moves (force) the annotated tag name to commit and returns the hash
// of the tag object.
func (r *Repo) AnnotatedTag(name, commit, message string) (string, error) {
	if _, err := r.git(nil, "tag", "--force", "-a", "-m", message, name, commit); err != nil {
		return "", err
	}
	return r.git(nil, "rev-parse", "refs/tags/"+name)
}

// ResetBranch points branch at commit (a force-push, possibly to an older commit).
func (r *Repo) ResetBranch(branch, commit string) error {
	_, err := r.git(nil, "update-ref", "refs/heads/"+branch, commit)
	return err
}

// DeleteRef deletes a full ref name such as "refs/tags/v1".
func (r *Repo) DeleteRef(ref string) error {
	_, err := r.git(nil, "update-ref", "-d", ref)
	return err
}

// Head returns the commit of branch.
func (r *Repo) Head(branch string) (string, error) {
	return r.git(nil, "rev-parse", "refs/heads/"+branch+"^{commit}")
}

// FastImport feeds a `git fast-import` stream into the repository; the fastest way to generate
// large histories.
func (r *Repo) FastImport(stream io.Reader) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.git(stream, "fast-import", "--quiet", "--force")
	return err
}

func (r *Repo) git(stdin io.Reader, args ...string) (string, error) {
	return git(r.Dir, stdin, append([]string{"--git-dir=" + r.Dir}, args...)...)
}

func (r *Repo) gitEnv(env []string, stdin io.Reader, args ...string) (string, error) {
	return gitCmd(r.Dir, env, stdin, append([]string{"--git-dir=" + r.Dir}, args...)...)
}

// git runs the git CLI with a clean identity and returns its trimmed stdout.
func git(dir string, stdin io.Reader, args ...string) (string, error) {
	return gitCmd(dir, nil, stdin, args...)
}

func gitCmd(dir string, env []string, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = stdin
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=convoy-test", "GIT_AUTHOR_EMAIL=test@convoy.dev",
		"GIT_COMMITTER_NAME=convoy-test", "GIT_COMMITTER_EMAIL=test@convoy.dev")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// ReadTree reads every file under root into a map for Commit, keyed by prefix and the
// slash-separated path relative to root ("" for no prefix).
func ReadTree(root, prefix string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		files[pathpkg.Join(prefix, filepath.ToSlash(rel))] = string(raw)
		return err
	})
	return files, err
}
