package sourcecontroller

import (
	"context"
	"fmt"
	"io/fs"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/gittest"
)

func TestGitSourceFollowsBranchAndKeepsCommitsReadable(t *testing.T) {
	env.Require(t)
	ns := newNamespace(t)
	srv, repo := gittest.NewServer(t)
	var commits []string
	commits = append(commits, gittest.Commit(t, repo, "one", map[string]string{"f.txt": "0"}))
	gs := createSource(t, ns, convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL("repo"), Ref: convoyv1alpha1.GitRef{Branch: "main"}})
	ready := waitReady(t, gs, commits[0])

	g := NewWithT(t)
	g.Expect(ready.Status.Artifact.Revision).To(Equal(sources.FormatRevision("main", commits[0])))
	g.Expect(pass.Get(ready, convoyv1alpha1.ReadyCondition).Message).To(ContainSubstring(ready.Status.Artifact.Revision))
	for i := 1; i < 3; i++ {
		commits = append(commits, gittest.Commit(t, repo, fmt.Sprint(i), map[string]string{"f.txt": fmt.Sprint(i)}))
		requestReconcile(t, gs)
		waitReady(t, gs, commits[i])
	}

	t.Run("all three commits are readable through Open", func(t *testing.T) {
		g := NewWithT(t)
		for i, c := range commits {
			fsys, err := testStore.Open(context.Background(), sources.KeyFor(ns, gs.Name), c)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fs.ReadFile(fsys, "f.txt")).To(Equal([]byte(fmt.Sprint(i))))
		}
	})
	t.Run("and from a store restarted with an empty storage path", func(t *testing.T) {
		g := NewWithT(t)
		s, err := sources.NewStore(t.TempDir(), sources.StoreOptions{Resolver: testReconciler.resolveRemote})
		g.Expect(err).NotTo(HaveOccurred())
		for i, c := range commits {
			fsys, err := s.Open(context.Background(), sources.KeyFor(ns, gs.Name), c)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fs.ReadFile(fsys, "f.txt")).To(Equal([]byte(fmt.Sprint(i))))
		}
	})
	t.Run("branch force-pushed to an older commit", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(repo.ResetBranch("main", commits[0])).To(Succeed())
		requestReconcile(t, gs)
		waitReady(t, gs, commits[0])
	})
	t.Run("events name the new revisions", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			list := &eventsv1.EventList{}
			g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
			var notes []string
			for _, e := range list.Items {
				notes = append(notes, e.Note)
			}
			g.Expect(notes).To(ContainElement("new revision " + sources.FormatRevision("main", commits[2])))
		}).Should(Succeed())
	})
	t.Run("deleting the GitSource removes its repository", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8sClient.Delete(context.Background(), gs)).To(Succeed())
		g.Eventually(testStore.Keys).ShouldNot(ContainElement(sources.KeyFor(ns, gs.Name)))
	})
}

func TestGitSourceNoOpPollWritesNothing(t *testing.T) {
	env.Require(t)
	ns := newNamespace(t)
	srv, repo := gittest.NewServer(t)
	c := gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	gs := createSource(t, ns, convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL("repo"), Ref: convoyv1alpha1.GitRef{Branch: "main"},
		Interval: &metav1.Duration{Duration: time.Second}})
	ready := waitReady(t, gs, c)
	// Let the first status patch settle, then take the baseline.
	time.Sleep(200 * time.Millisecond)
	ready = fetchSource(NewWithT(t), ready)
	before := srv.Stats()

	g := NewWithT(t)
	g.Eventually(func() int64 { return srv.Stats().Sub(before).Advertisements }, "10s").Should(BeNumerically(">=", 2),
		"two polls listed the remote refs")
	d := srv.Stats().Sub(before)
	g.Expect(d.UploadPacks).To(BeZero(), "no objects were fetched")
	after := fetchSource(g, ready)
	g.Expect(after.ResourceVersion).To(Equal(ready.ResourceVersion), "no status update")
}

func TestGitSourceSuspend(t *testing.T) {
	env.Require(t)
	ns := newNamespace(t)
	srv, repo := gittest.NewServer(t)
	c1 := gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	gs := createSource(t, ns, convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL("repo"), Ref: convoyv1alpha1.GitRef{Branch: "main"}})
	waitReady(t, gs, c1)
	updateSpec(t, gs, func(s *convoyv1alpha1.GitSourceSpec) { s.Suspend = true })
	time.Sleep(300 * time.Millisecond)
	before := srv.Stats()
	gittest.Commit(t, repo, "two", map[string]string{"f": "2"})
	requestReconcile(t, gs)
	g := NewWithT(t)
	g.Consistently(func(g Gomega) {
		g.Expect(fetchSource(g, gs).Status.Artifact.Commit).To(Equal(c1))
	}, "1s").Should(Succeed())
	g.Expect(srv.Stats().Sub(before).Advertisements).To(BeZero())
}
