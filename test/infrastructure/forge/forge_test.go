package forge_test

import (
	"context"
	"flag"
	"os"
	"testing"

	"code.gitea.io/sdk/gitea"
	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/infrastructure/forge"
)

var shared *forge.Forge

// TestMain starts one Gitea for the package, unless -short.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	var err error
	shared, err = forge.Start(context.Background(), forge.Options{})
	if err != nil {
		panic(err)
	}
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// TestPullRequestRoundTrip pushes a branch, opens a pull request, comments it, merges it, and
// sets and reads a commit status on the merge commit.
func TestPullRequestRoundTrip(t *testing.T) {
	if shared == nil {
		t.Skip("needs Gitea (not under -short)")
	}
	g := NewWithT(t)
	t.Logf("Gitea started in %s", shared.StartTime)
	ctx := context.Background()
	repo, err := shared.CreateRepo("roundtrip")
	g.Expect(err).NotTo(HaveOccurred())
	head, err := shared.Push(ctx, forge.PushInput{Repo: repo, Branch: "change", Message: "Add a file",
		Files: map[string]string{"pkg/a.yaml": "a: 1\n"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).To(HaveLen(40))
	pr, err := shared.OpenPullRequest(repo, "change", "main", "Add a file")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = shared.Comment(repo, pr, "## Plan\n\nnothing")
	g.Expect(err).NotTo(HaveOccurred())
	comments, err := shared.Comments(repo, pr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(comments).To(ContainElement(HaveField("Body", "## Plan\n\nnothing")))
	merge, err := shared.Merge(repo, pr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(merge).To(HaveLen(40))
	g.Expect(merge).NotTo(Equal(head))
	_, _, err = shared.Client.CreateStatus(repo.Owner.UserName, repo.Name, merge, gitea.CreateStatusOption{
		State: gitea.StatusPending, Context: "convoy/test", Description: "1/3 partitions"})
	g.Expect(err).NotTo(HaveOccurred())
	statuses, err := shared.Statuses(repo, merge)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(statuses).To(ContainElement(And(HaveField("Context", "convoy/test"), HaveField("State", gitea.StatusPending))))
}
