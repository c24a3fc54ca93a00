package bench

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// TestWaitAllFollowsTheChangedPackages: waitAll returns once every watched namespace holds
// Packages that all satisfy the predicate, counting the Packages present before it started,
// those that change after, the ones deleted and the ones outside its namespaces apart; a
// re-list makes it look at every Package again.
func TestWaitAllFollowsTheChangedPackages(t *testing.T) {
	g := NewWithT(t)
	w := &packageWatch{changed: make(chan struct{}, 1), waiters: map[*changes]struct{}{}}
	pkg := func(ns, rev string) *convoyv1alpha1.Package {
		return &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "addon", ResourceVersion: "1"},
			Spec: convoyv1alpha1.PackageSpec{Revision: rev}}
	}
	onNew := func(p *convoyv1alpha1.Package) bool { return p.Spec.Revision == "new" }
	w.replace([]convoyv1alpha1.Package{*pkg("a", "new"), *pkg("b", "old")})

	events := watch.NewFake()
	go w.consume(events)
	done := make(chan error, 1)
	go func() {
		_, err := w.waitAll(context.Background(), map[string]bool{"a": true, "b": true, "c": true}, onNew, time.Minute)
		done <- err
	}()
	notYet := func() { g.Consistently(done, 150*time.Millisecond).ShouldNot(Receive()) }

	notYet() // b is old and c has no Package
	events.Add(pkg("c", "new"))
	events.Add(pkg("outside", "old"))
	notYet() // b is still old
	events.Modify(pkg("b", "new"))
	events.Modify(pkg("a", "old"))
	notYet() // a went back
	events.Delete(pkg("c", "new"))
	events.Modify(pkg("a", "new"))
	notYet() // c has no Package again

	// A re-list replaces the state as a whole: waitAll counts it again.
	w.replace([]convoyv1alpha1.Package{*pkg("a", "new"), *pkg("b", "new"), *pkg("c", "new")})
	g.Eventually(done).Should(Receive(BeNil()))
	events.Stop()

	w.mu.Lock()
	defer w.mu.Unlock()
	g.Expect(w.waiters).To(BeEmpty(), "a waitAll that returned collects no more changes")
}
