package rolloutcontroller

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// TestPlanInputNamesTheCurrentRevision: once a rollout completed, the update revision is the
// current one, and the planner must be told, or a HostedCluster joining the settled fleet would
// take a budget slot (or wait for its partition) instead of getting what every cluster has.
func TestPlanInputNamesTheCurrentRevision(t *testing.T) {
	stored := func(name string, n int64) storedRevision {
		return storedRevision{obj: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Revision: n},
			rev: rollout.Revision{Name: name, Number: n}}
	}
	for _, tc := range []struct {
		name, current, want string
		older               int
	}{
		{name: "settled", current: "addon-b", want: "addon-b", older: 1},
		{name: "rolling out", current: "addon-a", want: "addon-a", older: 0},
		{name: "first rollout", current: "", want: "", older: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon"}}
			obj.Status.CurrentRevision = tc.current
			s := &scope{obj: obj, update: rollout.Revision{Name: "addon-b", Number: 2},
				revisions: []storedRevision{stored("addon-a", 1), stored("addon-b", 2)}}
			in := planInput(s, nil, nil)
			if tc.want == "" {
				g.Expect(in.CurrentRevision).To(BeNil())
			} else {
				g.Expect(in.CurrentRevision).NotTo(BeNil())
				g.Expect(in.CurrentRevision.Name).To(Equal(tc.want))
			}
			g.Expect(in.OlderRevisions).To(HaveLen(tc.older))
		})
	}
}
