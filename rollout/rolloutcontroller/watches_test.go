package rolloutcontroller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// TestPackageChangedIgnoresARequestForAPass: asking every Package for a pass (kubectl annotate
// convoy.dev/requestedAt) must not make every HostedClusterPackage plan again; a change of what
// the planner reads must.
func TestPackageChangedIgnoresARequestForAPass(t *testing.T) {
	settled := func(mutate func(*convoyv1alpha1.Package)) *convoyv1alpha1.Package {
		p := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1,
			Annotations: map[string]string{rollout.SpecUpdatedAtAnnotation: "t1"}}}
		p.Status.Revision = "r1"
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		mutate func(*convoyv1alpha1.Package)
		want   bool
	}{
		{name: "a pass requested", want: false, mutate: func(p *convoyv1alpha1.Package) {
			p.Annotations[convoyv1alpha1.RequestedAtAnnotation] = "now"
		}},
		{name: "the planner's annotation", want: true, mutate: func(p *convoyv1alpha1.Package) {
			p.Annotations[rollout.SpecUpdatedAtAnnotation] = "t2"
		}},
		{name: "a pass requested and another annotation", want: true, mutate: func(p *convoyv1alpha1.Package) {
			p.Annotations[convoyv1alpha1.RequestedAtAnnotation] = "now"
			p.Annotations["team"] = "a"
		}},
		{name: "a new revision", want: true, mutate: func(p *convoyv1alpha1.Package) { p.Status.Revision = "r2" }},
		{name: "a shard set by hand", want: true, mutate: func(p *convoyv1alpha1.Package) {
			p.Labels = map[string]string{convoyv1alpha1.ShardLabel: "y"}
		}},
		{name: "another label", want: false, mutate: func(p *convoyv1alpha1.Package) {
			p.Labels = map[string]string{"team": "a"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := packageChanged().Update(event.UpdateEvent{ObjectOld: settled(nil), ObjectNew: settled(tc.mutate)})
			NewWithT(t).Expect(got).To(Equal(tc.want))
		})
	}
}

// TestPackageEventsSpacePassesByTheirDuration: the passes that Package events start are spaced
// by four times the last pass's duration, at least packageEventBatching and at most
// maxPackageEventBatching after the last pass started; a pass still running spaces the next by
// the one before it, and a pass that forgot its HostedClusterPackage leaves nothing behind.
func TestPackageEventsSpacePassesByTheirDuration(t *testing.T) {
	g := NewWithT(t)
	start := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		took, want time.Duration
	}{
		{took: 0, want: packageEventBatching},
		{took: 20 * time.Millisecond, want: packageEventBatching},
		{took: 150 * time.Millisecond, want: 600 * time.Millisecond},
		{took: 400 * time.Millisecond, want: maxPackageEventBatching},
		{took: 10 * time.Second, want: maxPackageEventBatching},
	} {
		g.Expect(passTimes{started: start, took: tc.took}.next()).To(Equal(start.Add(tc.want)), "a pass of %s", tc.took)
	}

	r := &HostedClusterPackageReconciler{}
	r.passes.Store("addon", passTimes{started: start, took: 150 * time.Millisecond})
	started := r.startPass("addon")
	g.Expect(r.packageEventDelay(reconcile.Request{NamespacedName: types.NamespacedName{Name: "addon"}})).To(
		BeNumerically("~", 600*time.Millisecond, 100*time.Millisecond), "spaced by the pass before while one runs")
	r.endPass("addon", started)
	last, _ := r.passes.Load("addon")
	g.Expect(last.(passTimes).took).To(BeNumerically("<", 150*time.Millisecond))

	started = r.startPass("gone")
	r.passes.Delete("gone") // what forget does
	r.endPass("gone", started)
	_, ok := r.passes.Load("gone")
	g.Expect(ok).To(BeFalse())
}
