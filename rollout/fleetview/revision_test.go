package fleetview

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

func TestDecodeRevisionReadsBothShapes(t *testing.T) {
	template := convoyv1alpha1.PackageTemplateSpec{SourceRef: convoyv1alpha1.SourceReference{Name: "addons"}, Path: "p"}
	commit := strings.Repeat("1", 40)
	encoded, err := EncodeRevision(rollout.Revision{Commit: commit, Template: template})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	cases := map[string]string{
		"commit and template": string(encoded),
		"package spec":        `{"spec": {"sourceRef": {"name": "addons"}, "path": "p", "revision": "` + commit + `"}}`,
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "r-1"}, Data: runtime.RawExtension{Raw: []byte(data)}}
			rev, ok := DecodeRevision(cr)
			g.Expect(ok).To(BeTrue())
			g.Expect(rev).To(Equal(rollout.Revision{Name: "r-1", Commit: commit, Template: template}))
		})
	}
	t.Run("unknown shape", func(t *testing.T) {
		g := NewWithT(t)
		cr := &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte(`{"other": 1}`)}}
		_, ok := DecodeRevision(cr)
		g.Expect(ok).To(BeFalse())
	})
}

func TestBarFillsInProportion(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Bar(0, 4)).To(Equal("[" + strings.Repeat(".", 20) + "]"))
	g.Expect(Bar(1, 4)).To(Equal("[#####" + strings.Repeat(".", 15) + "]"))
	g.Expect(Bar(0, 0)).To(Equal("[" + strings.Repeat("#", 20) + "]"))
}
