package controlplane

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// binaryDirEnv names the folder of the binaries built by `make tools` (the Makefile sets it).
const binaryDirEnv = "CONVOY_TEST_BINARIES"

func TestStartInstallsCRDsAndStopLeavesNothing(t *testing.T) {
	dir := os.Getenv(binaryDirEnv)
	if testing.Short() || dir == "" {
		t.Skip("needs kube-apiserver and etcd from `make tools` in $" + binaryDirEnv + ", without -short")
	}
	g := NewWithT(t)
	ctx := context.Background()
	cp, err := Start(ctx, Options{BinaryDir: dir, CRDs: []*apiextensionsv1.CustomResourceDefinition{widgetCRD()}})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = cp.Stop() }()

	c, err := client.New(cp.Config, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	widget := &unstructured.Unstructured{}
	widget.SetAPIVersion("test.convoy.dev/v1")
	widget.SetKind("Widget")
	widget.SetNamespace("default")
	widget.SetName("w")
	g.Expect(c.Create(ctx, widget)).To(Succeed(), "the CRD is established when Start returns")

	impersonated := rest.CopyConfig(cp.Config)
	impersonated.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:default:nobody"}
	sa, err := client.New(impersonated, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	err = sa.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("default"))
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "RBAC applies to an impersonated ServiceAccount: %v", err)

	pids := []int{cp.etcd.PID(), cp.apiServer.PID()}
	g.Expect(cp.Stop()).To(Succeed())
	g.Expect(cp.Stop()).To(Succeed(), "Stop twice")
	for _, pid := range pids {
		g.Expect(exec.Command("kill", "-0", strconv.Itoa(pid)).Run()).To(HaveOccurred(), "process %d is gone", pid)
	}
	g.Expect(cp.dir).NotTo(BeADirectory())
}

func TestRestartAPIServerKeepsTheData(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp := startForTest(t)
	c, err := client.New(cp.Config, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"}, Data: map[string]string{"a": "1"}}
	g.Expect(c.Create(ctx, cm)).To(Succeed())

	down, err := cp.RestartAPIServer(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(down).To(BeNumerically(">", 0))
	got := &corev1.ConfigMap{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed(), "same address, certificates and etcd")
	g.Expect(got.Data).To(Equal(cm.Data))
}

func TestStartFailsClearlyWithoutBinaries(t *testing.T) {
	g := NewWithT(t)
	_, err := Start(context.Background(), Options{BinaryDir: t.TempDir()})
	g.Expect(err).To(MatchError(ContainSubstring("starting etcd")))
}

// widgetCRD is a namespaced kind that accepts any fields.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.test.convoy.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "test.convoy.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", ListKind: "WidgetList", Plural: "widgets", Singular: "widget"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
}

func TestCompactStorageDiscardsTheHistory(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cp := startForTest(t)
	key := []byte("/convoy-test/history")
	put := func(value string) string {
		var out struct {
			Header struct {
				Revision string `json:"revision"`
			} `json:"header"`
		}
		g.Expect(cp.etcdCall(ctx, "/v3/kv/put", map[string]any{"key": key, "value": []byte(value)}, &out)).To(Succeed())
		return out.Header.Revision
	}
	old := put("1")
	put("2")
	g.Expect(cp.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": key, "revision": old}, nil)).To(Succeed(), "the history is kept until compacted")

	g.Expect(cp.CompactStorage(ctx)).To(Succeed())
	err := cp.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": key, "revision": old}, nil)
	g.Expect(err).To(MatchError(ContainSubstring("compacted")))
	g.Expect(cp.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": key}, nil)).To(Succeed(), "the current value stays")
	current, err := cp.etcdRevision(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cp.compactAt(ctx, current)).To(Succeed())
	g.Expect(cp.compactAt(ctx, current)).To(Succeed(), "compacting again at a compacted revision")
	g.Expect(cp.compactAt(ctx, old)).To(Succeed(), "compacting below the compacted revision, as a late periodic compaction does")
}

// startForTest starts a control plane without CRDs that stops when t ends, or skips t without
// the binaries of `make tools`.
func startForTest(t *testing.T) *ControlPlane {
	t.Helper()
	dir := os.Getenv(binaryDirEnv)
	if testing.Short() || dir == "" {
		t.Skip("needs kube-apiserver and etcd from `make tools` in $" + binaryDirEnv + ", without -short")
	}
	cp, err := Start(context.Background(), Options{BinaryDir: dir})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cp.Stop() })
	return cp
}
