package sourcecontroller

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

func TestGitSourceBadInputKeepsLastArtifact(t *testing.T) {
	env.Require(t)
	ns := newNamespace(t)
	srv, _ := gittest.NewServer(t)
	_, err := srv.CreateRepo("empty")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())

	cases := []struct {
		name string
		// change breaks a Ready source: a spec change or a push to its repository.
		change func(t *testing.T, gs *convoyv1alpha1.GitSource, repo *gitserver.Repo)
		reason string
		// message is part of the Ready message.
		message string
	}{
		{"unreachable host", specChange(func(s *convoyv1alpha1.GitSourceSpec) { s.URL = "http://127.0.0.1:1/repo.git" }),
			convoyv1alpha1.GitOperationFailedReason, "connection refused"},
		{"repository does not exist", specChange(func(s *convoyv1alpha1.GitSourceSpec) { s.URL = srv.HTTPURL("nope") }),
			convoyv1alpha1.GitOperationFailedReason, "repository not found"},
		{"empty repository", specChange(func(s *convoyv1alpha1.GitSourceSpec) { s.URL = srv.HTTPURL("empty") }),
			convoyv1alpha1.RefNotFoundReason, "empty"},
		{"ref does not exist", specChange(func(s *convoyv1alpha1.GitSourceSpec) { s.Ref = convoyv1alpha1.GitRef{Branch: "nope"} }),
			convoyv1alpha1.RefNotFoundReason, `branch "nope" not found`},
		{"no tag matches the semver range", specChange(func(s *convoyv1alpha1.GitSourceSpec) { s.Ref = convoyv1alpha1.GitRef{SemVer: ">=9"} }),
			convoyv1alpha1.RefNotFoundReason, "no tag matching"},
		{"symlink pointing outside", push(gitserver.File{Path: "pkg/evil", Content: "../../../etc/passwd", Symlink: true}),
			sources.UnsafeSymlinkReason, `symlink "pkg/evil" points outside`},
		{"file over the size limit", push(gitserver.File{Path: "big.bin", Content: strings.Repeat("x", int(suiteLimits.MaxFileSize)+1)}),
			convoyv1alpha1.StorageLimitExceededReason, `"big.bin"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			repo, err := srv.CreateRepo(strings.ReplaceAll(tc.name, " ", "-"))
			g.Expect(err).NotTo(HaveOccurred())
			good, err := repo.Commit("main", "good", map[string]string{"pkg/a.yaml": "a: 1"})
			g.Expect(err).NotTo(HaveOccurred())
			gs := createSource(t, ns, convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL(repo.Name), Ref: convoyv1alpha1.GitRef{Branch: "main"}})
			before := waitReady(t, gs, good)

			tc.change(t, gs, repo)
			out := waitCondition(t, gs, convoyv1alpha1.FetchFailedCondition, tc.reason)
			ready := pass.Get(out, convoyv1alpha1.ReadyCondition)
			g.Expect(ready.Status).To(BeEquivalentTo("False"))
			g.Expect(ready.Reason).To(Equal(tc.reason))
			g.Expect(ready.Message).To(ContainSubstring(tc.message))
			g.Expect(out.Status.Artifact).To(Equal(before.Status.Artifact), "the last good artifact stays")
			g.Expect(pass.Get(out, convoyv1alpha1.StalledCondition)).To(BeNil())
			g.Expect(pass.IsTrue(out, convoyv1alpha1.ReconcilingCondition)).To(BeTrue())
		})
	}
}

func TestGitSourceInvalidSemVerStalls(t *testing.T) {
	env.Require(t)
	ns := newNamespace(t)
	srv, repo := gittest.NewServer(t)
	gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	gs := createSource(t, ns, convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL("repo"), Ref: convoyv1alpha1.GitRef{SemVer: "not a range"}})
	out := waitCondition(t, gs, convoyv1alpha1.StalledCondition, convoyv1alpha1.InvalidSpecReason)
	NewWithT(t).Expect(pass.Get(out, convoyv1alpha1.StalledCondition).Message).To(ContainSubstring("ref.semver"))
}

func specChange(mutate func(*convoyv1alpha1.GitSourceSpec)) func(*testing.T, *convoyv1alpha1.GitSource, *gitserver.Repo) {
	return func(t *testing.T, gs *convoyv1alpha1.GitSource, _ *gitserver.Repo) { updateSpec(t, gs, mutate) }
}

func push(files ...gitserver.File) func(*testing.T, *convoyv1alpha1.GitSource, *gitserver.Repo) {
	return func(t *testing.T, gs *convoyv1alpha1.GitSource, repo *gitserver.Repo) {
		_, err := repo.CommitFiles("main", "bad", files...)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		requestReconcile(t, gs)
	}
}
