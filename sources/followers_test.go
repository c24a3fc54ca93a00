package sources

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

func TestPromotionFollowersHearOfTheBusGoingAndComing(t *testing.T) {
	polled := func(mutate func(*convoyv1alpha1.GitSource)) *convoyv1alpha1.GitSource {
		gs := &convoyv1alpha1.GitSource{Status: convoyv1alpha1.GitSourceStatus{
			Artifact:  &convoyv1alpha1.Artifact{Revision: "main@sha1:" + "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"},
			Promotion: &convoyv1alpha1.PromotionRefsStatus{Digest: "sha256:1"}}}
		if mutate != nil {
			mutate(gs)
		}
		return gs
	}
	failed := func(gs *convoyv1alpha1.GitSource) {
		gs.Status.Conditions = []metav1.Condition{{Type: convoyv1alpha1.FetchFailedCondition, Status: metav1.ConditionTrue,
			Reason: "GitOperationFailed", Message: "timed out"}}
	}
	for _, tc := range []struct {
		name     string
		old, new *convoyv1alpha1.GitSource
		passes   bool
	}{
		{"nothing changed", polled(nil), polled(nil), false},
		{"the repository out of reach", polled(nil), polled(failed), true},
		{"the repository back", polled(failed), polled(nil), true},
		{"a record published", polled(nil), polled(func(gs *convoyv1alpha1.GitSource) { gs.Status.Promotion.Digest = "sha256:2" }), true},
		{"the refs unreadable", polled(nil), polled(func(gs *convoyv1alpha1.GitSource) { gs.Status.Promotion.Error = "too large" }), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := ArtifactOrPromotionChangedPredicate().Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new})
			g.Expect(got).To(Equal(tc.passes))
		})
	}
}
