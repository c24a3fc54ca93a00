package restmapper

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper counts the RESTMapping questions it answers.
type countingMapper struct {
	*meta.DefaultRESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	return c.DefaultRESTMapper.RESTMapping(gk, versions...)
}

func TestMemoizeAsksOncePerKindAndKeepsNoFailure(t *testing.T) {
	g := NewWithT(t)
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	inner := meta.NewDefaultRESTMapper([]schema.GroupVersion{widget.GroupVersion()})
	next := &countingMapper{DefaultRESTMapper: inner}
	m := Memoize(next)

	_, err := m.RESTMapping(widget.GroupKind(), widget.Version)
	g.Expect(meta.IsNoMatchError(err)).To(BeTrue(), "an unknown kind is not found")
	inner.Add(widget, meta.RESTScopeNamespace)
	for range 3 {
		mapping, err := m.RESTMapping(widget.GroupKind(), widget.Version)
		g.Expect(err).NotTo(HaveOccurred(), "a failure is not kept: the kind installed later is found")
		g.Expect(mapping.Resource.Resource).To(Equal("widgets"))
		g.Expect(mapping.Scope.Name()).To(Equal(meta.RESTScopeNameNamespace))
		mapping.Resource.Resource = "changed by a caller"
	}
	g.Expect(next.asked).To(Equal(2), "one failure, then one answer kept for every later question")

	_, err = m.RESTMapping(widget.GroupKind())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(next.asked).To(Equal(3), "other versions are another question")
}
