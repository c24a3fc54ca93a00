package restmapper

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper counts the RESTMapping questions it answers.
type countingMapper struct {
	*apimeta.DefaultRESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*apimeta.RESTMapping, error) {
	c.asked++
	return c.DefaultRESTMapper.RESTMapping(gk, versions...)
}

var widget = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

// memoizedAt returns Memoize of next with a clock the test moves.
func memoizedAt(next apimeta.RESTMapper, clock *time.Time) *memoized {
	m := Memoize(next).(*memoized)
	m.now = func() time.Time { return *clock }
	return m
}

func TestMemoizeAsksOncePerKindAndKeepsNoFailure(t *testing.T) {
	g := NewWithT(t)
	inner := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{widget.GroupVersion()})
	next := &countingMapper{DefaultRESTMapper: inner}
	clock := time.Unix(0, 0)
	m := memoizedAt(next, &clock)

	_, err := m.RESTMapping(widget.GroupKind(), widget.Version)
	g.Expect(apimeta.IsNoMatchError(err)).To(BeTrue(), "an unknown kind is not found")
	inner.Add(widget, apimeta.RESTScopeNamespace)
	for range 3 {
		mapping, err := m.RESTMapping(widget.GroupKind(), widget.Version)
		g.Expect(err).NotTo(HaveOccurred(), "a failure is not kept: the kind installed later is found")
		g.Expect(mapping.Resource.Resource).To(Equal("widgets"))
		g.Expect(mapping.Scope.Name()).To(Equal(apimeta.RESTScopeNameNamespace))
		mapping.Resource.Resource = "changed by a caller"
	}
	g.Expect(next.asked).To(Equal(2), "one failure, then one answer kept for every later question")

	_, err = m.RESTMapping(widget.GroupKind())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(next.asked).To(Equal(3), "other versions are another question")
}

func TestMemoizeLearnsWhatTheMapperLearnsWithinKeepFor(t *testing.T) {
	g := NewWithT(t)
	namespaced := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{widget.GroupVersion()})
	namespaced.Add(widget, apimeta.RESTScopeNamespace)
	next := &countingMapper{DefaultRESTMapper: namespaced}
	clock := time.Unix(0, 0)
	m := memoizedAt(next, &clock)
	mapping, err := m.RESTMapping(widget.GroupKind(), widget.Version)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mapping.Scope.Name()).To(Equal(apimeta.RESTScopeNameNamespace))

	// The CustomResourceDefinition is created again cluster-scoped, and the mapper reloads.
	clusterScoped := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{widget.GroupVersion()})
	clusterScoped.Add(widget, apimeta.RESTScopeRoot)
	next.DefaultRESTMapper = clusterScoped
	clock = clock.Add(KeepFor - time.Millisecond)
	mapping, err = m.RESTMapping(widget.GroupKind(), widget.Version)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mapping.Scope.Name()).To(Equal(apimeta.RESTScopeNameNamespace), "the kept answer, within KeepFor")
	clock = clock.Add(time.Millisecond)
	mapping, err = m.RESTMapping(widget.GroupKind(), widget.Version)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mapping.Scope.Name()).To(Equal(apimeta.RESTScopeNameRoot), "the mapper's new answer once KeepFor passed")
	g.Expect(next.asked).To(Equal(2))
}
