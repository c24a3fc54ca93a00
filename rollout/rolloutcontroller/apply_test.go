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
		Revision: rollout.Revision{Commit: "0123456789abcdef0123456789abcdef01234567", Template: tmpl}}, stamp{specUpdatedAt: "now", finalizer: true})
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

// TestPackagesCarryTheFinalizerWhereThisReplicaReconcilesThem: the HostedClusterPackage's
// apply carries convoy's finalizer for a Package of the unsharded replica (which runs both
// controllers), never first for a Package of a shard (whose replica may not be running: its
// deletion would wait for it), and always once the Package has it, so that no apply drops it.
func TestPackagesCarryTheFinalizerWhereThisReplicaReconcilesThem(t *testing.T) {
	g := NewWithT(t)
	with := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"other", convoyv1alpha1.Finalizer}}}
	without := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{"other"}}}
	g.Expect(withFinalizer("", nil)).To(BeTrue(), "a new Package of the unsharded replica")
	g.Expect(withFinalizer("", without)).To(BeTrue(), "a Package of the unsharded replica")
	g.Expect(withFinalizer("a", nil)).To(BeFalse(), "a new Package of a shard")
	g.Expect(withFinalizer("a", without)).To(BeFalse(), "a Package of a shard its replica never reached")
	g.Expect(withFinalizer("a", with)).To(BeTrue(), "a Package of a shard that has it")
}
