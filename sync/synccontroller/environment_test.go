package synccontroller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sync/hosted"
)

// fixedVersion is a discovery client that reports one version.
type fixedVersion string

// ServerVersion implements discovery.ServerVersionInterface.
func (v fixedVersion) ServerVersion() (*version.Info, error) {
	return &version.Info{GitVersion: string(v)}, nil
}

// openShiftObject returns a config.openshift.io/v1 object with a status.
func openShiftObject(kind, name string, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetAPIVersion("config.openshift.io/v1")
	u.SetKind(kind)
	u.SetName(name)
	return u
}

// TestClusterEnvironmentReadsOpenShiftAsPackageOperatorDoes checks the parts of the environment
// only an OpenShift and HyperShift management cluster has; the Kubernetes version from a real
// API server is checked by the envtest suites.
func TestClusterEnvironmentReadsOpenShiftAsPackageOperatorDoes(t *testing.T) {
	g := NewWithT(t)
	configGV := schema.GroupVersion{Group: "config.openshift.io", Version: "v1"}
	mapper := apimeta.NewDefaultRESTMapper(nil)
	mapper.Add(configGV.WithKind("ClusterVersion"), apimeta.RESTScopeRoot)
	mapper.Add(configGV.WithKind("Proxy"), apimeta.RESTScopeRoot)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), apimeta.RESTScopeNamespace)
	mapper.Add(hosted.HostedClusterGVK, apimeta.RESTScopeNamespace)
	cl := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithRESTMapper(mapper).WithObjects(
		openShiftObject("ClusterVersion", "version", map[string]any{"history": []any{
			map[string]any{"state": "Partial", "version": "4.18.0"},
			map[string]any{"state": "Completed", "version": "4.17.9"},
		}}),
		openShiftObject("Proxy", "cluster", map[string]any{"httpsProxy": "http://proxy:3128", "noProxy": ".svc"}),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: managedOpenShiftNamespace, Name: managedOpenShiftConfigMap},
			Data: map[string]string{"api.openshift.com_id": "abc"}},
	).Build()
	ce := &ClusterEnvironment{Discovery: fixedVersion("v1.30.4"), Reader: cl, Mapper: mapper}
	env, err := ce.Get(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env).To(Equal(&manifests.Environment{
		Kubernetes: manifests.KubernetesEnvironment{Version: "v1.30.4"},
		OpenShift: &manifests.OpenShiftEnvironment{Version: "4.17.9",
			Managed: &manifests.ManagedOpenShiftEnvironment{Data: map[string]string{"api.openshift.com_id": "abc"}}},
		Proxy:      &manifests.ProxyEnvironment{HTTPSProxy: "http://proxy:3128", NoProxy: ".svc"},
		HyperShift: &manifests.HyperShiftEnvironment{},
	}))

	plain := &ClusterEnvironment{Discovery: fixedVersion("v1.31.0"), Reader: fake.NewClientBuilder().Build(),
		Mapper: apimeta.NewDefaultRESTMapper(nil)}
	env, err = plain.Get(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env).To(Equal(&manifests.Environment{Kubernetes: manifests.KubernetesEnvironment{Version: "v1.31.0"}}))
}
