package rolloutcontroller

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// TestPackageForCarriesTheTemplateServiceAccount: the ServiceAccount of a HostedClusterPackage
// template reaches every Package it stamps out, so that the engine applies as it (tenant
// lockdown), and the Package is controlled by the HostedClusterPackage, which lets it use a
// GitSource of another namespace.
func TestPackageForCarriesTheTemplateServiceAccount(t *testing.T) {
	g := NewWithT(t)
	hcpkg := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon", UID: "uid-1"}}
	tmpl := convoyv1alpha1.PackageTemplateSpec{SourceRef: convoyv1alpha1.SourceReference{Namespace: "fleet", Name: "addons"},
		Path: "p", ServiceAccountName: "addon-deployer"}
	u, err := packageFor(hcpkg, rollout.Change{Package: types.NamespacedName{Namespace: "clusters-a", Name: "addon"},
		Revision: rollout.Revision{Commit: "0123456789abcdef0123456789abcdef01234567", Template: tmpl}}, stamp{specUpdatedAt: "now"})
	g.Expect(err).NotTo(HaveOccurred())
	sa, _, err := unstructured.NestedString(u.Object, "spec", "serviceAccountName")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sa).To(Equal("addon-deployer"))
	owner := metav1.GetControllerOf(u)
	g.Expect(owner).NotTo(BeNil())
	g.Expect(owner.Kind).To(Equal("HostedClusterPackage"))
	g.Expect(owner.Name).To(Equal(u.GetName()))
	g.Expect(owner.UID).To(Equal(hcpkg.UID))
	g.Expect(u.GetFinalizers()).To(ConsistOf(convoyv1alpha1.Finalizer), "created with the finalizer: no write of its own")
}
