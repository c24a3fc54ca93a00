package engine

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

func TestPlacedDigestsTellEveryPreparedObjectApart(t *testing.T) {
	g := NewWithT(t)
	e := NewEngine(Options{})
	c := &scopeClient{scopes: map[string]bool{"ConfigMap": true}}
	prepared := func(target *Target, data string, digests bool) manifests.Digest {
		target.Management = c
		ph := &Phase{Name: "deploy", Objects: []*unstructured.Unstructured{kubetest.ConfigMap("", "a", map[string]string{"v": data})}}
		if digests {
			d, ok := manifests.ObjectDigest(ph.Objects[0])
			g.Expect(ok).To(BeTrue())
			ph.Digests = []manifests.Digest{d}
		}
		_, rest := splitStages(ph)
		c := target.cluster(convoyv1alpha1.ClassManagement)
		p, err := e.place(c, ph, rest)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rest[0].obj.Object).To(HaveLen(3), "a stub: apiVersion, kind and metadata")
		g.Expect(rest[0].obj.GetNamespace()).To(Equal(target.Namespace))
		g.Expect(e.prepare(c, ph, rest, p)).To(Succeed())
		g.Expect(rest[0].obj.GetNamespace()).To(Equal(target.Namespace))
		g.Expect(rest[0].obj.GetLabels()).To(HaveKeyWithValue(convoyv1alpha1.PackageNameLabel, target.Name))
		g.Expect(rest[0].obj.Object["data"]).To(HaveKeyWithValue("v", data))
		g.Expect(ph.Objects[0].GetNamespace()).To(BeEmpty(), "the source is not changed")
		g.Expect(ph.Objects[0].GetLabels()).To(BeEmpty(), "the source is not changed")
		return rest[0].digest
	}
	base := prepared(&Target{Kind: "Package", Namespace: "ns", Name: "p"}, "1", true)
	g.Expect(prepared(&Target{Kind: "Package", Namespace: "ns", Name: "p"}, "1", false)).To(Equal(base),
		"digests given with the phase are the ones the engine computes")
	for name, other := range map[string]manifests.Digest{
		"another source":    prepared(&Target{Kind: "Package", Namespace: "ns", Name: "p"}, "2", true),
		"another namespace": prepared(&Target{Kind: "Package", Namespace: "ns2", Name: "p"}, "1", true),
		"another owner":     prepared(&Target{Kind: "Package", Namespace: "ns", Name: "q"}, "1", true),
		"another shard":     prepared(&Target{Kind: "Package", Namespace: "ns", Name: "p", Shard: "a"}, "1", true),
	} {
		g.Expect(other).NotTo(Equal(base), name)
	}
}

func TestWhatAPassReadsOrWritesIsPlacedWithTheMappersCurrentAnswer(t *testing.T) {
	g := NewWithT(t)
	e := NewEngine(Options{})
	c := &scopeClient{scopes: map[string]bool{"ConfigMap": true}}
	target := &Target{Kind: "Package", Namespace: "ns", Name: "p", Management: c}
	mgmt := target.cluster(convoyv1alpha1.ClassManagement)
	ph := &Phase{Name: "deploy", Objects: []*unstructured.Unstructured{kubetest.ConfigMap("", "a", nil)}}
	_, states := splitStages(ph)
	p, err := e.place(mgmt, ph, states)
	g.Expect(err).NotTo(HaveOccurred())

	c.scopes["ConfigMap"] = false // made again cluster-scoped: management phases refuse it
	g.Expect(e.place(mgmt, ph, states)).Error().NotTo(HaveOccurred(), "a remembered answer finds the quiet objects")
	err = e.prepare(mgmt, ph, states, p)
	g.Expect(err).To(HaveOccurred(), "an object the pass reads or writes is placed with the current answer")
	g.Expect(err.Error()).To(ContainSubstring("is cluster-scoped"))

	c.scopes["ConfigMap"] = true // namespaced again: the remembered refusal is asked again
	g.Expect(e.place(mgmt, ph, states)).Error().NotTo(HaveOccurred())
	g.Expect(states[0].namespace).To(Equal("ns"))
}

func TestScopesAskTheMapperOncePerManagementKind(t *testing.T) {
	g := NewWithT(t)
	c := &scopeClient{scopes: map[string]bool{"ConfigMap": true, "ClusterRole": false}}
	mgmt := &cluster{name: convoyv1alpha1.InventoryClusterManagement, client: c}
	hosted := &cluster{name: convoyv1alpha1.InventoryClusterHosted, client: c}
	s := newScopes()
	cm := kubetest.ConfigMap("ns", "a", nil)
	role := kubetest.Object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "r", nil)
	unknown := kubetest.Object("example.com/v1", "Widget", "ns", "w", nil)

	for range 3 {
		g.Expect(s.isNamespaced(mgmt, cm, false)).To(BeTrue())
		g.Expect(s.isNamespaced(mgmt, role, false)).To(BeFalse())
	}
	g.Expect(c.asked).To(Equal(2), "one question per kind of the management cluster")

	for range 2 {
		_, err := s.isNamespaced(mgmt, unknown, false)
		g.Expect(err).To(HaveOccurred())
	}
	g.Expect(c.asked).To(Equal(4), "an unknown kind is asked again")

	for range 2 {
		g.Expect(s.isNamespaced(hosted, cm, false)).To(BeTrue())
	}
	g.Expect(c.asked).To(Equal(6), "hosted clusters ask their own mapper")

	c.scopes["ConfigMap"] = false // its definition made again with the other scope
	g.Expect(s.isNamespaced(mgmt, cm, false)).To(BeTrue(), "remembered")
	g.Expect(s.isNamespaced(mgmt, cm, true)).To(BeFalse(), "asked again")
	g.Expect(s.isNamespaced(mgmt, cm, false)).To(BeFalse(), "the new answer is remembered")
}
