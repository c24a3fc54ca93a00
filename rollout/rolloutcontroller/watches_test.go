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

// TestPackageEventsWaitLongerWhenOnlyProgressRemains: a Package event starts a pass at once
// after a quiet spell, else packageEventBatching after the last pass started, and
// progressEventBatching after a pass whose plan left only the Packages' progress.
func TestPackageEventsWaitLongerWhenOnlyProgressRemains(t *testing.T) {
	g := NewWithT(t)
	r := &HostedClusterPackageReconciler{}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "addon"}}
	g.Expect(r.packageEventDelay(req)).To(BeZero(), "no pass yet")

	// delayAfter returns the delay right after a pass marked now, and how long the call took:
	// the delay is the batching less that time.
	delayAfter := func(onlyProgress bool) (time.Duration, time.Duration) {
		started := time.Now()
		r.passes.Store(req.Name, passMark{started: started, onlyProgress: onlyProgress})
		d := r.packageEventDelay(req)
		return d, time.Since(started)
	}
	d, took := delayAfter(false)
	g.Expect(d).To(And(BeNumerically("<=", packageEventBatching), BeNumerically(">=", packageEventBatching-took)))
	d, took = delayAfter(true)
	g.Expect(d).To(And(BeNumerically("<=", progressEventBatching), BeNumerically(">=", progressEventBatching-took)))

	r.passes.Store(req.Name, passMark{started: time.Now().Add(-2 * progressEventBatching), onlyProgress: true})
	g.Expect(r.packageEventDelay(req)).To(BeNumerically("<=", 0), "a quiet spell")
}

// TestPackageEventsWaitLongerInALargerFleet: the batching grows with the fleet the last pass
// planned, beyond batchingFleet and up to its bound, so that a larger fleet does not also pass
// more often; a pass under way keeps the batching of the pass before it.
func TestPackageEventsWaitLongerInALargerFleet(t *testing.T) {
	for _, tc := range []struct {
		mark passMark
		want time.Duration
	}{
		{passMark{fleet: 0}, packageEventBatching},
		{passMark{fleet: batchingFleet}, packageEventBatching},
		{passMark{fleet: 5 * batchingFleet}, 5 * packageEventBatching},
		{passMark{fleet: 100 * batchingFleet}, maxPackageEventBatching},
		{passMark{fleet: 10, onlyProgress: true}, progressEventBatching},
		{passMark{fleet: 5 * batchingFleet, onlyProgress: true}, 5 * progressEventBatching},
		{passMark{fleet: 100 * batchingFleet, onlyProgress: true}, maxProgressEventBatching},
	} {
		NewWithT(t).Expect(tc.mark.batching()).To(Equal(tc.want), "%+v", tc.mark)
	}

	g := NewWithT(t)
	r := &HostedClusterPackageReconciler{}
	planned := passMark{started: time.Now().Add(-time.Hour), onlyProgress: true, fleet: 5 * batchingFleet}
	r.passes.Store("addon", planned)
	started := time.Now()
	r.markPassStarted("addon", started)
	mark := func(name string) any { m, _ := r.passes.Load(name); return m }
	g.Expect(mark("addon")).To(Equal(passMark{started: started, onlyProgress: true, fleet: 5 * batchingFleet}))
	r.markPassStarted("other", started)
	g.Expect(mark("other")).To(Equal(passMark{started: started}), "no pass before")
}
