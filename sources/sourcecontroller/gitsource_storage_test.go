package sourcecontroller

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/gittest"
)

// TestStoreKeepsTheCommitsThatPackagesAndRevisionsReferTo force-pushes the followed branch to
// a new history and pushes enough commits for a garbage collection: the commits a Package
// and a ControllerRevision refer to stay, the rest of the old history goes.
func TestStoreKeepsTheCommitsThatPackagesAndRevisionsReferTo(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	srv, repo := gittest.NewServer(t)
	pinnedByPackage := gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	pinnedByRevision := gittest.Commit(t, repo, "two", map[string]string{"f": "2"})
	dropped := gittest.Commit(t, repo, "three", map[string]string{"f": "3"})
	gs := createSource(t, ns, convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL("repo"),
		Ref: convoyv1alpha1.GitRef{Branch: "main"}, Interval: &metav1.Duration{Duration: time.Second}})
	waitReady(t, gs, dropped)
	key := sources.KeyFor(ns, gs.Name)

	pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pinned"},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: convoyv1alpha1.PackageTemplateSpec{
			SourceRef: convoyv1alpha1.SourceReference{Name: gs.Name}, Path: "p"}, Revision: pinnedByPackage}}
	g.Expect(k8sClient.Create(ctx, pkg)).To(Succeed())
	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hcpkg-rev"}, Revision: 1,
		Data: runtime.RawExtension{Raw: fmt.Appendf(nil, `{"commit":%q,"template":{}}`, pinnedByRevision)}}
	g.Expect(k8sClient.Create(ctx, cr)).To(Succeed())

	root, err := repo.Commit("fresh", "fresh start", map[string]string{"g": "0"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.ResetBranch("main", root)).To(Succeed())
	var head string
	for i := range sources.DefaultCollectPackLimit + 1 {
		head = gittest.Commit(t, repo, fmt.Sprint("push ", i), map[string]string{"g": fmt.Sprint(i)})
		waitReady(t, gs, head)
	}
	g.Eventually(func() bool { return testStore.Has(key, dropped) }).Should(BeFalse(), "collected")
	for _, c := range []string{pinnedByPackage, pinnedByRevision, root, head} {
		g.Expect(testStore.Has(key, c)).To(BeTrue(), "kept: %s", c)
	}
}

// TestShardReplicaStoreIsCollected fetches four commits on demand into a store of its own, as
// a shard replica does (one pack each), and collects it as the shard replica's runnable does:
// the packs are repacked into one, and the commits a Package and the artifact refer to stay.
func TestShardReplicaStoreIsCollected(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	srv, repo := gittest.NewServer(t)
	pinned := gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	gs := createSource(t, ns, convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL("repo"),
		Ref: convoyv1alpha1.GitRef{Branch: "main"}, Interval: &metav1.Duration{Duration: time.Second}})
	key := sources.KeyFor(ns, gs.Name)
	dir := t.TempDir()
	store, err := sources.NewStore(dir, sources.StoreOptions{Limits: suiteLimits, PackGrace: time.Millisecond, CollectPackLimit: 2})
	g.Expect(err).NotTo(HaveOccurred())
	r := &GitSourceReconciler{Client: k8sClient, APIReader: k8sClient, Store: store,
		URLPolicy: sources.URLPolicy{AllowInsecureHTTP: true}}
	store.SetResolver(r.resolveRemote)

	commits := []string{pinned}
	for i := range 4 {
		if i > 0 {
			commits = append(commits, gittest.Commit(t, repo, fmt.Sprint("push ", i), map[string]string{"f": fmt.Sprint(i + 1)}))
		}
		_, err := store.Open(ctx, key, commits[len(commits)-1])
		g.Expect(err).NotTo(HaveOccurred())
	}
	head := commits[len(commits)-1]
	waitReady(t, gs, head)
	g.Expect(k8sClient.Create(ctx, &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pinned"},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: convoyv1alpha1.PackageTemplateSpec{
			SourceRef: convoyv1alpha1.SourceReference{Name: gs.Name}, Path: "p"}, Revision: pinned}})).To(Succeed())
	g.Expect(packFiles(t, dir)).To(BeNumerically(">", 2), "one pack per on-demand fetch")

	r.collectAll(ctx)
	g.Eventually(func() int { r.collectAll(ctx); return packFiles(t, dir) }).Should(Equal(1), "repacked, superseded packs deleted")
	g.Expect(store.Has(key, pinned)).To(BeTrue())
	g.Expect(store.Has(key, head)).To(BeTrue())
}

// packFiles counts the pack files under dir.
func packFiles(t *testing.T, dir string) int {
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".pack") {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
