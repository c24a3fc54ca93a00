package engine

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// scopeClient answers IsObjectNamespaced from scopes and counts the questions; an unknown kind
// is an error.
type scopeClient struct {
	client.Client
	scopes map[string]bool
	asked  int
}

func (c *scopeClient) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	c.asked++
	namespaced, ok := c.scopes[obj.GetObjectKind().GroupVersionKind().Kind]
	if !ok {
		return false, errors.New("no match")
	}
	return namespaced, nil
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
