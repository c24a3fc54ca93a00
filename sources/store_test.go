package sources

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"testing/fstest"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

func TestPollResolvesEachRefKind(t *testing.T) {
	srv, repo := gittest.NewServer(t)
	c1 := gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	c2 := gittest.Commit(t, repo, "two", map[string]string{"f": "2"})
	c3 := gittest.Commit(t, repo, "three", map[string]string{"f": "3"})
	g := NewWithT(t)
	g.Expect(repo.Tag("v1.0.0", c1)).To(Succeed())
	_, err := repo.AnnotatedTag("v1.2.0", c2, "annotated")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Tag("v2.0.0", c3)).To(Succeed())
	g.Expect(repo.Tag("not-a-version", c3)).To(Succeed())

	cases := []struct {
		name string
		ref  convoyv1alpha1.GitRef
		want Revision
	}{
		{"branch", convoyv1alpha1.GitRef{Branch: "main"}, Revision{Ref: "main", Commit: c3}},
		{"lightweight tag", convoyv1alpha1.GitRef{Tag: "v1.0.0"}, Revision{Ref: "v1.0.0", Commit: c1}},
		{"annotated tag peeled", convoyv1alpha1.GitRef{Tag: "v1.2.0"}, Revision{Ref: "v1.2.0", Commit: c2}},
		{"semver highest match", convoyv1alpha1.GitRef{SemVer: ">=1.0.0 <2.0.0"}, Revision{Ref: "v1.2.0", Commit: c2}},
		{"semver any", convoyv1alpha1.GitRef{SemVer: "*"}, Revision{Ref: "v2.0.0", Commit: c3}},
		{"commit", convoyv1alpha1.GitRef{Commit: c1}, Revision{Commit: c1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newStore(t, Limits{})
			res, err := s.Poll(testCtx(t), KeyFor("ns", "src"), Remote{URL: srv.HTTPURL("repo")}, tc.ref)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Revision).To(Equal(tc.want))
			g.Expect(res.Fetched).To(BeTrue())
			_, err = s.Open(testCtx(t), KeyFor("ns", "src"), tc.want.Commit)
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
}

func TestPollFollowsMovedRefs(t *testing.T) {
	srv, repo := gittest.NewServer(t)
	c1 := gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	c2 := gittest.Commit(t, repo, "two", map[string]string{"f": "2"})
	s := newStore(t, Limits{})
	key, remote := KeyFor("ns", "src"), Remote{URL: srv.HTTPURL("repo")}

	t.Run("branch force-pushed to an older commit", func(t *testing.T) {
		g := NewWithT(t)
		res, err := s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Revision.Commit).To(Equal(c2))
		g.Expect(repo.ResetBranch("main", c1)).To(Succeed())
		res, err = s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Revision).To(Equal(Revision{Ref: "main", Commit: c1}))
		g.Expect(res.Fetched).To(BeFalse(), "c1 was already stored")
	})
	t.Run("tag moved", func(t *testing.T) {
		g := NewWithT(t)
		_, err := repo.AnnotatedTag("v1", c1, "first")
		g.Expect(err).NotTo(HaveOccurred())
		res, err := s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Tag: "v1"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Revision.Commit).To(Equal(c1))
		c3, err := repo.Commit("other", "three", map[string]string{"f": "3"})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = repo.AnnotatedTag("v1", c3, "moved")
		g.Expect(err).NotTo(HaveOccurred())
		res, err = s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Tag: "v1"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Revision).To(Equal(Revision{Ref: "v1", Commit: c3}))
		g.Expect(res.Fetched).To(BeTrue())
	})
}

func TestPollOfUnchangedRemoteTransfersNothing(t *testing.T) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	s := newStore(t, Limits{})
	key, remote := KeyFor("ns", "src"), Remote{URL: srv.HTTPURL("repo")}
	_, err := s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())

	before := srv.Stats()
	res, err := s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Fetched).To(BeFalse())
	d := srv.Stats().Sub(before)
	g.Expect(d.Advertisements).To(Equal(int64(1)), "one ls-remote")
	g.Expect(d.UploadPacks).To(BeZero(), "no fetch")

	gittest.Commit(t, repo, "two", map[string]string{"g": "2"})
	before = srv.Stats()
	res, err = s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Fetched).To(BeTrue())
	g.Expect(srv.Stats().Sub(before).UploadPacks).To(Equal(int64(1)))
}

func TestEveryFetchedCommitStaysReadable(t *testing.T) {
	srv, repo := gittest.NewServer(t)
	root := t.TempDir()
	key, remote := KeyFor("ns", "src"), Remote{URL: srv.HTTPURL("repo")}
	var commits []string
	s1, err := NewStore(root, StoreOptions{})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for i := range 3 {
		c := gittest.Commit(t, repo, fmt.Sprint(i), map[string]string{"f.txt": fmt.Sprint("content ", i)})
		commits = append(commits, c)
		_, err := s1.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
	}
	// Rewrite history: the first two commits are no longer on any branch.
	NewWithT(t).Expect(repo.ResetBranch("main", commits[0])).To(Succeed())

	check := func(t *testing.T, s *Store) {
		g := NewWithT(t)
		for i, c := range commits {
			fsys, err := s.Open(testCtx(t), key, c)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fs.ReadFile(fsys, "f.txt")).To(Equal([]byte(fmt.Sprint("content ", i))))
		}
	}
	t.Run("same process", func(t *testing.T) { check(t, s1) })
	t.Run("restart with the same storage path", func(t *testing.T) {
		s2, err := NewStore(root, StoreOptions{})
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		before := srv.Stats()
		check(t, s2)
		NewWithT(t).Expect(srv.Stats().Sub(before).Advertisements).To(BeZero(), "nothing fetched")
	})
	t.Run("restart with an empty storage path fetches on demand", func(t *testing.T) {
		g := NewWithT(t)
		// The remote still has the later commits, unreferenced (reachable by hash only through
		// a ref): give them a ref so a fresh store can fetch them.
		g.Expect(repo.Tag("keep", commits[2])).To(Succeed())
		s3, err := NewStore(t.TempDir(), StoreOptions{Resolver: staticResolver(remote)})
		g.Expect(err).NotTo(HaveOccurred())
		check(t, s3)
	})
	t.Run("missing commit is a typed error", func(t *testing.T) {
		g := NewWithT(t)
		_, err := s1.Open(testCtx(t), key, "0123456789012345678901234567890123456789")
		g.Expect(IsCommitNotFound(err)).To(BeTrue(), "%v", err)
	})
}

func TestOpenIsAnFSAndConcurrentSafe(t *testing.T) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	c, err := repo.CommitFiles("main", "tree",
		gitserver.File{Path: "pkg/a.yaml", Content: "a: 1\n"},
		gitserver.File{Path: "pkg/sub/b.yaml", Content: "b: 2\n"},
		gitserver.File{Path: "pkg/link.yaml", Content: "sub/b.yaml", Symlink: true},
		gitserver.File{Path: "pkg/dirlink", Content: "sub", Symlink: true},
		gitserver.File{Path: "pkg/escape", Content: "../../etc/passwd", Symlink: true},
		gitserver.File{Path: "README", Content: "hi"})
	g.Expect(err).NotTo(HaveOccurred())
	s := newStore(t, Limits{})
	key := KeyFor("ns", "src")
	_, err = s.Poll(testCtx(t), key, Remote{URL: srv.FileURL("repo")}, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	fsys, err := s.Open(testCtx(t), key, c)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(fs.ReadFile(fsys, "pkg/link.yaml")).To(Equal([]byte("b: 2\n")))
	g.Expect(fs.ReadFile(fsys, "pkg/dirlink/b.yaml")).To(Equal([]byte("b: 2\n")))
	_, err = fs.ReadFile(fsys, "pkg/escape")
	var up *UnsafePathError
	g.Expect(errors.As(err, &up)).To(BeTrue(), "%v", err)
	sub, err := fs.Sub(fsys, "pkg/sub")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fstest.TestFS(sub, "b.yaml")).To(Succeed())

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			f, err := s.Open(testCtx(t), key, c)
			if err == nil {
				_, err = fs.ReadFile(f, "pkg/a.yaml")
			}
			if err == nil {
				_, err = fs.ReadFile(fsys, "pkg/sub/b.yaml")
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

func TestVerifyEnforcesLimits(t *testing.T) {
	srv, repo := gittest.NewServer(t)
	key, remote := KeyFor("ns", "src"), Remote{URL: srv.HTTPURL("repo")}
	s := newStore(t, Limits{MaxFiles: 2, MaxFileSize: 10, MaxTotalBytes: 15})
	poll := func(t *testing.T) string {
		res, err := s.Poll(testCtx(t), key, remote, convoyv1alpha1.GitRef{Branch: "main"})
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		return res.Revision.Commit
	}
	t.Run("within limits", func(t *testing.T) {
		gittest.Commit(t, repo, "ok", map[string]string{"a": "0123456789"})
		NewWithT(t).Expect(s.Verify(testCtx(t), key, poll(t))).To(Succeed())
	})
	cases := []struct {
		name  string
		files []gitserver.File
		want  string
	}{
		{"file too large", []gitserver.File{{Path: "big", Content: "0123456789a"}}, "file size limit of 10 exceeded"},
		{"total too large", []gitserver.File{{Path: "b", Content: "0123456789"}, {Path: "c", Content: "0123456789"}}, "total size"},
		{"too many files", []gitserver.File{{Path: "d", Content: "1"}, {Path: "e", Content: "1"}, {Path: "f", Content: "1"}}, "files limit"},
		{"symlink out of the tree", []gitserver.File{{Path: "x/l", Content: "../../outside", Symlink: true}}, "points outside"},
		{"absolute symlink", []gitserver.File{{Path: "l", Content: "/etc/passwd", Symlink: true}}, "points outside"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := repo.CommitFiles("main", tc.name, append([]gitserver.File{{Path: "a", Delete: true}}, tc.files...)...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Verify(testCtx(t), key, poll(t))).To(MatchError(ContainSubstring(tc.want)))
			// Reset the tree for the next case.
			_, err = repo.CommitFiles("main", "reset", deleteAll(tc.files)...)
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
}

func deleteAll(files []gitserver.File) []gitserver.File {
	out := make([]gitserver.File, len(files))
	for i, f := range files {
		out[i] = gitserver.File{Path: f.Path, Delete: true}
	}
	return out
}

func TestDeleteRemovesTheRepository(t *testing.T) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	c := gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	s := newStore(t, Limits{})
	key := KeyFor("ns", "src")
	_, err := s.Poll(testCtx(t), key, Remote{URL: srv.FileURL("repo")}, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Delete(key)).To(Succeed())
	g.Expect(s.dir(key)).NotTo(BeADirectory())
	_, err = s.Open(testCtx(t), key, c)
	g.Expect(err).To(HaveOccurred(), "no remote known any more")
}

func staticResolver(r Remote) RemoteResolver {
	return func(_ context.Context, _ Key) (Remote, error) { return r, nil }
}

func TestOpenReportsSymlinksWithoutFollowingThem(t *testing.T) {
	g := NewWithT(t)
	srv, repo := gittest.NewServer(t)
	c, err := repo.CommitFiles("main", "tree",
		gitserver.File{Path: "pkg/sub/b.yaml", Content: "b: 2\n"},
		gitserver.File{Path: "pkg/link.yaml", Content: "../shared/c.yaml", Symlink: true},
		gitserver.File{Path: "shared/c.yaml", Content: "c: 3\n"})
	g.Expect(err).NotTo(HaveOccurred())
	s := newStore(t, Limits{})
	key := KeyFor("ns", "src")
	_, err = s.Poll(testCtx(t), key, Remote{URL: srv.FileURL("repo")}, convoyv1alpha1.GitRef{Branch: "main"})
	g.Expect(err).NotTo(HaveOccurred())
	fsys, err := s.Open(testCtx(t), key, c)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(fs.ReadLink(fsys, "pkg/link.yaml")).To(Equal("../shared/c.yaml"))
	info, err := fs.Lstat(fsys, "pkg/link.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode() & fs.ModeSymlink).NotTo(BeZero())
	info, err = fs.Lstat(fsys, "pkg/sub")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.IsDir()).To(BeTrue())
	info, err = fs.Lstat(fsys, "pkg/sub/b.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Size()).To(BeEquivalentTo(5))
	_, err = fs.ReadLink(fsys, "pkg/sub/b.yaml")
	g.Expect(err).To(MatchError(fs.ErrInvalid))
	_, err = fs.Lstat(fsys, "pkg/missing")
	g.Expect(err).To(MatchError(fs.ErrNotExist))
}
