package rolloutcontroller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/eventrec"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// TestControllerStartsWhenTheHostedClusterCRDAppears runs a manager on a management cluster
// without HyperShift, then installs the HostedCluster CRD: the HostedClusterPackage controller
// must start in the same process, without a restart.
func TestControllerStartsWhenTheHostedClusterCRDAppears(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bare, err := fleet.Start(ctx, fleet.Options{WithoutHyperShift: true})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = bare.Stop() }()
	managerErr := startRolloutOnly(ctx, g, bare)

	hcpkg := &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: "late-crd"},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{Template: convoyv1alpha1.PackageTemplate{
			Spec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Name: "addons", Namespace: "fleet"}, Path: "packages/a"},
		}},
	}
	g.Expect(bare.Client.Create(ctx, hcpkg)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(bare.Client.Get(ctx, client.ObjectKeyFromObject(hcpkg), hcpkg)).To(Succeed())
		g.Expect(hcpkg.Status.Conditions).To(BeEmpty())
	}, 2*time.Second).Should(Succeed(), "no controller runs while HostedClusters are not served")

	installHyperShiftCRDs(ctx, g, bare)
	g.Eventually(func(g Gomega) {
		g.Expect(bare.Client.Get(ctx, client.ObjectKeyFromObject(hcpkg), hcpkg)).To(Succeed())
		g.Expect(apimeta.FindStatusCondition(hcpkg.Status.Conditions, convoyv1alpha1.ReadyCondition)).NotTo(BeNil())
	}).Should(Succeed(), "the controller started and reconciled the HostedClusterPackage")
	g.Expect(managerErr).NotTo(Receive(), "the manager kept running")
}

// startRolloutOnly runs a manager with only the HostedClusterPackage controller, polling for
// the HostedCluster CRD every 200ms; it stops with ctx. The channel receives the manager's
// error if it stops early.
func startRolloutOnly(ctx context.Context, g Gomega, f *fleet.Fleet) <-chan error {
	cacheOpts := cache.Options{}
	ConfigureCache(&cacheOpts)
	// Note: the suite's manager already registered the controller's name in this process.
	mgr, err := ctrl.NewManager(f.Config, ctrl.Options{Scheme: f.Scheme, Cache: cacheOpts,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	g.Expect(err).NotTo(HaveOccurred())
	mgr, err = eventrec.WrapManager(mgr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Setup(mgr, SetupOptions{CRDPollInterval: 200 * time.Millisecond})).To(Succeed())
	errs := make(chan error, 1)
	go func() {
		if err := mgr.Start(ctx); err != nil {
			errs <- err
		}
	}()
	return errs
}

// installHyperShiftCRDs creates the HostedCluster and HostedControlPlane CRDs and waits until
// they are established.
func installHyperShiftCRDs(ctx context.Context, g Gomega, f *fleet.Fleet) {
	crds, err := simfleet.CRDs()
	g.Expect(err).NotTo(HaveOccurred())
	for _, crd := range crds {
		if crd.Spec.Group != "hypershift.openshift.io" {
			continue
		}
		g.Expect(f.Client.Create(ctx, crd)).To(Succeed())
		g.Eventually(func(g Gomega) {
			live := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(crd), live)).To(Succeed())
			g.Expect(established(live)).To(BeTrue())
		}).Should(Succeed())
	}
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
