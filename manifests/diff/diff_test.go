package diff

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/convoy-gitops/convoy/manifests"
)

func configMap(name string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "ns"}, "data": data}}
}

func render(phases ...manifests.Phase) *manifests.Rendered {
	return &manifests.Rendered{Phases: phases}
}

func TestRendersReportsMovesAndIgnoresServerFields(t *testing.T) {
	g := NewWithT(t)
	live := configMap("same", map[string]any{"k": "v"})
	live.SetResourceVersion("42")
	live.SetUID("u")
	live.SetManagedFields(nil)
	_ = unstructured.SetNestedField(live.Object, map[string]any{"phase": "x"}, "status")
	old := render(manifests.Phase{Name: "one", Objects: []*unstructured.Unstructured{live, configMap("moved", map[string]any{"a": "1"})}})
	cur := render(
		manifests.Phase{Name: "one", Objects: []*unstructured.Unstructured{configMap("same", map[string]any{"k": "v"})}},
		manifests.Phase{Name: "two", Class: "hosted-cluster", Objects: []*unstructured.Unstructured{configMap("moved", map[string]any{"a": "1"})}},
	)
	r, err := Renders("a", "b", old, cur)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Phases).To(HaveLen(1), "the object without status and server fields is the same")
	g.Expect(r.Phases[0].Name).To(Equal("two"))
	g.Expect(r.Phases[0].Class).To(Equal("hosted-cluster"))
	g.Expect(r.Phases[0].Objects).To(HaveLen(1))
	moved := r.Phases[0].Objects[0]
	g.Expect(moved.MovedFrom).To(Equal("one"))
	g.Expect(moved.Diff).To(BeEmpty(), "only the phase changed")
	var text bytes.Buffer
	g.Expect(r.WriteText(&text)).To(Succeed())
	g.Expect(text.String()).To(ContainSubstring("~ ConfigMap ns/moved (moved from phase one)"))
}

func TestRendersOfAMissingSide(t *testing.T) {
	g := NewWithT(t)
	cur := render(manifests.Phase{Name: "deploy", Objects: []*unstructured.Unstructured{configMap("new", map[string]any{"k": "v"})}})
	r, err := Renders("none", "b", nil, cur)
	g.Expect(err).NotTo(HaveOccurred())
	added, changed, removed := r.Counts()
	g.Expect([]int{added, changed, removed}).To(Equal([]int{1, 0, 0}))
	g.Expect(r.Phases[0].Objects[0].Diff).To(HavePrefix("--- a/ConfigMap ns/new\n+++ b/ConfigMap ns/new\n@@ -0,0 +1,"))
	r, err = Renders("a", "none", cur, nil)
	g.Expect(err).NotTo(HaveOccurred())
	added, changed, removed = r.Counts()
	g.Expect([]int{added, changed, removed}).To(Equal([]int{0, 0, 1}))
}

func TestMarkdownFenceOutgrowsBackticks(t *testing.T) {
	g := NewWithT(t)
	g.Expect(fenceFor("no ticks")).To(Equal("```"))
	g.Expect(fenceFor("a ```` b")).To(Equal("`````"))
}

func TestMarkdownOfAMoveHasNoEmptyFence(t *testing.T) {
	g := NewWithT(t)
	r := &Report{From: "a", To: "b"}
	r.Add("two", "management", ObjectDiff{Action: Changed, APIVersion: "v1", Kind: "ConfigMap", Name: "x", MovedFrom: "one"})
	var md bytes.Buffer
	g.Expect(r.WriteMarkdown(&md)).To(Succeed())
	g.Expect(md.String()).To(ContainSubstring("**changed** `ConfigMap x` (moved from phase one)"))
	g.Expect(md.String()).NotTo(ContainSubstring("```diff"))
}
