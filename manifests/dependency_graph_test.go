package manifests

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestDependencyGraph orders a chain and a diamond, names a cycle and the dependencies outside
// the set.
func TestDependencyGraph(t *testing.T) {
	head := func(name string, needs ...string) ManifestHead {
		h := ManifestHead{Name: name}
		for _, n := range needs {
			h.Dependencies = append(h.Dependencies, Dependency{Name: n, Package: n})
		}
		return h
	}
	t.Run("chain and diamond", func(t *testing.T) {
		g := NewWithT(t)
		graph := NewDependencyGraph([]ManifestHead{head("app", "certs", "monitoring"), head("webhook", "certs"),
			head("certs", "crds"), head("monitoring", "crds", "metrics-server"), head("crds")})
		g.Expect(graph.Order).To(Equal([][]string{{"crds"}, {"certs", "monitoring"}, {"app", "webhook"}}))
		g.Expect(graph.String()).To(Equal("crds; certs, monitoring; app, webhook"))
		g.Expect(graph.Outside).To(Equal([]string{"monitoring needs metrics-server"}))
		g.Expect(graph.Cycle).To(BeNil())
	})
	t.Run("cycle", func(t *testing.T) {
		g := NewWithT(t)
		graph := NewDependencyGraph([]ManifestHead{head("a", "b"), head("b", "c"), head("c", "a"), head("d")})
		g.Expect(graph.Cycle).To(Equal([]string{"a", "b", "c", "a"}))
		g.Expect(graph.Order).To(BeEmpty())
	})
}
