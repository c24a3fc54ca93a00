package sources

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// Size of the generated benchmark repository.
const (
	benchFiles   = 5000
	benchCommits = 500
)

var (
	benchOnce sync.Once
	benchSrv  *gitserver.Server
	benchRepo *gitserver.Repo
	benchErr  error
)

// benchServer generates, once per process, a repository of benchFiles files and benchCommits
// commits (the first adds every file, each later one changes five) served over HTTP.
func benchServer(b *testing.B) (*gitserver.Server, *gitserver.Repo) {
	benchOnce.Do(func() {
		dir, err := makeTempDir()
		if err != nil {
			benchErr = err
			return
		}
		if benchSrv, benchErr = gitserver.New(dir); benchErr != nil {
			return
		}
		if _, benchErr = benchSrv.StartHTTP(); benchErr != nil {
			return
		}
		if benchRepo, benchErr = benchSrv.CreateRepo("bench"); benchErr != nil {
			return
		}
		benchErr = benchRepo.FastImport(fastImportStream())
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchSrv, benchRepo
}

// fastImportStream writes the benchmark history as a git fast-import stream.
func fastImportStream() *bytes.Buffer {
	var s bytes.Buffer
	for c := 0; c < benchCommits; c++ {
		fmt.Fprintf(&s, "commit refs/heads/main\ncommitter bench <bench@convoy.dev> %d +0000\n", 1700000000+c)
		msg := fmt.Sprintf("commit %d", c)
		fmt.Fprintf(&s, "data %d\n%s\n", len(msg), msg)
		for _, f := range changedFiles(c) {
			content := benchFile(f, c)
			fmt.Fprintf(&s, "M 100644 inline packages/p%03d/file%04d.yaml\ndata %d\n%s\n", f%100, f, len(content), content)
		}
	}
	return &s
}

// changedFiles returns the files commit c writes.
func changedFiles(c int) []int {
	if c == 0 {
		out := make([]int, benchFiles)
		for i := range out {
			out[i] = i
		}
		return out
	}
	return []int{(c * 7) % benchFiles, (c * 13) % benchFiles, (c * 31) % benchFiles, (c * 101) % benchFiles, (c * 997) % benchFiles}
}

// benchFile is a YAML-like file of about 600 bytes.
func benchFile(f, c int) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  labels: {revision: %q}\ndata:\n", f, fmt.Sprint(c))
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, "  key%02d: value-%d-%d-%d\n", i, f, c, i*f%97)
	}
	return b.String()
}

// BenchmarkStore measures the store against the git CLI on the same server in the same run:
// first clone, no-op poll and an incremental fetch of one new commit. "wire-B/op" is what the
// server sent (advertisements and packs).
func BenchmarkStore(b *testing.B) {
	srv, repo := benchServer(b)
	url := srv.HTTPURL("bench")
	ref := convoyv1alpha1.GitRef{Branch: "main"}
	ctx := context.Background()

	b.Run("FirstClone/convoy", func(b *testing.B) {
		measure(b, srv, nil, func() error {
			s, err := NewStore(b.TempDir(), StoreOptions{})
			if err == nil {
				_, err = s.Poll(ctx, KeyFor("ns", "bench"), Remote{URL: url}, ref)
			}
			return err
		})
	})
	b.Run("FirstClone/git", func(b *testing.B) {
		measure(b, srv, nil, func() error { return gitCLI("", "clone", "--quiet", "--bare", url, filepath.Join(b.TempDir(), "c")) })
	})

	store, err := NewStore(b.TempDir(), StoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	poll := func() error { _, err := store.Poll(ctx, KeyFor("ns", "bench"), Remote{URL: url}, ref); return err }
	clone := filepath.Join(b.TempDir(), "clone")
	gitFetch := func() error {
		return gitCLI(clone, "fetch", "--quiet", "--no-tags", url, "+refs/heads/main:refs/heads/main")
	}
	if err := poll(); err != nil {
		b.Fatal(err)
	}
	if err := gitCLI("", "clone", "--quiet", "--bare", url, clone); err != nil {
		b.Fatal(err)
	}
	b.Run("NoopPoll/convoy", func(b *testing.B) { measure(b, srv, nil, poll) })
	b.Run("NoopPoll/git", func(b *testing.B) { measure(b, srv, nil, gitFetch) })

	n := 0
	newCommit := func() error {
		n++
		_, err := repo.Commit("main", "incremental", map[string]string{
			fmt.Sprintf("packages/p%03d/file%04d.yaml", n%100, n): benchFile(n, benchCommits+n),
		})
		return err
	}
	b.Run("IncrementalFetch/convoy", func(b *testing.B) { measure(b, srv, newCommit, poll) })
	b.Run("IncrementalFetch/git", func(b *testing.B) {
		// Bring the clone up to date with what the convoy run added.
		if err := gitFetch(); err != nil {
			b.Fatal(err)
		}
		measure(b, srv, newCommit, gitFetch)
	})
}

// measure runs op b.N times, each after an untimed prepare, and reports the bytes served.
func measure(b *testing.B, srv *gitserver.Server, prepare, op func() error) {
	var served int64
	for b.Loop() {
		if prepare != nil {
			b.StopTimer()
			if err := prepare(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		before := srv.Stats()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		served += srv.Stats().Sub(before).Bytes
	}
	b.ReportMetric(float64(served)/float64(b.N), "wire-B/op")
}

// gitCLI runs the git CLI in dir.
func gitCLI(dir string, args ...string) error {
	if dir != "" {
		args = append([]string{"--git-dir=" + dir}, args...)
	}
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %v: %w: %s", args, err, out)
	}
	return nil
}
