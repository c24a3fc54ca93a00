package simfleet_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// riskGroup is HyperShift's partition label, the kind of label tests give HostedClusters.
const riskGroup = "hypershift.openshift.io/risk-group"

// TestFleetWithTwoHostedClusters starts a management cluster and two hosted clusters, checks
// what HyperShift would have created for each, then that Stop ends every process it started.
func TestFleetWithTwoHostedClusters(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f, err := simfleet.Start(ctx, simfleet.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Stop() }()
	hcs, err := f.AddHostedClusters(ctx,
		simfleet.HostedClusterInput{Name: "blue", Labels: map[string]string{riskGroup: "early"}},
		simfleet.HostedClusterInput{Namespace: "fleet-b", Name: "green.two", Labels: map[string]string{riskGroup: "late"}})
	g.Expect(err).NotTo(HaveOccurred())

	t.Run("installs convoy's and HyperShift's CRDs", func(t *testing.T) {
		expectCRDsEstablished(ctx, NewWithT(t), f)
	})
	t.Run("creates each HostedCluster with its labels and HCP namespace", func(t *testing.T) {
		g := NewWithT(t)
		expectHostedCluster(ctx, g, f, hcs[0], "clusters", "clusters-blue", map[string]string{riskGroup: "early"})
		expectHostedCluster(ctx, g, f, hcs[1], "fleet-b", "fleet-b-green-two", map[string]string{riskGroup: "late"})
	})
	t.Run("kubeconfig Secret reaches the hosted cluster's own API server", func(t *testing.T) {
		g := NewWithT(t)
		expectOwnAPIServer(ctx, g, f, hcs[0], hcs[1])
		expectOwnAPIServer(ctx, g, f, hcs[1], hcs[0])
	})
	t.Run("KubeConfigFor writes a kubeconfig clientcmd loads", func(t *testing.T) {
		g := NewWithT(t)
		dir := t.TempDir()
		raw, err := f.KubeConfig()
		g.Expect(err).NotTo(HaveOccurred())
		expectKubeconfigFileReaches(ctx, g, filepath.Join(dir, "management"), raw, "convoy-dev", f.Config.Host)
		raw, err = simfleet.KubeConfigFor(hcs[1].Config, "green")
		g.Expect(err).NotTo(HaveOccurred())
		expectKubeconfigFileReaches(ctx, g, filepath.Join(dir, "green"), raw, "green", hcs[1].Config.Host)
	})

	hosts := []string{f.Config.Host, hcs[0].Config.Host, hcs[1].Config.Host}
	g.Expect(childProcesses(g)).To(ConsistOf(
		"etcd", "etcd", "etcd", "kube-apiserver", "kube-apiserver", "kube-apiserver"),
		"one etcd and one kube-apiserver per cluster")
	for _, host := range hosts {
		g.Expect(apiServersServing(g, host)).To(HaveLen(1), "one kube-apiserver serves %s", host)
	}
	g.Expect(f.Stop()).To(Succeed())
	g.Expect(childProcesses(g)).To(BeEmpty(), "Stop ends every process it started")
	for _, host := range hosts {
		g.Expect(apiServersServing(g, host)).To(BeEmpty())
		_, err := net.DialTimeout("tcp", hostPort(g, host), time.Second)
		g.Expect(err).To(HaveOccurred(), "nothing listens on %s any more", host)
	}
	g.Expect(f.Stop()).To(Succeed(), "Stop twice")
}

// expectCRDsEstablished checks that every CRD of simfleet.CRDs is established on the
// management API server.
func expectCRDsEstablished(ctx context.Context, g Gomega, f *simfleet.Fleet) {
	want, err := simfleet.CRDs()
	g.Expect(err).NotTo(HaveOccurred())
	for _, crd := range want {
		got := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(f.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, got)).To(Succeed())
		established := false
		for _, c := range got.Status.Conditions {
			established = established || c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		}
		g.Expect(established).To(BeTrue(), "%s is established", crd.Name)
	}
	g.Expect(f.Client.List(ctx, &convoyv1alpha1.HostedClusterPackageList{})).To(Succeed(), "convoy's kinds are served")
}

// expectHostedCluster checks the objects HyperShift would have created for hc on the
// management cluster.
func expectHostedCluster(ctx context.Context, g Gomega, f *simfleet.Fleet, hc *simfleet.HostedCluster,
	namespace, hcpNamespace string, labels map[string]string) {
	g.Expect(hc.Namespace).To(Equal(namespace))
	g.Expect(hc.HCPNamespace).To(Equal(hcpNamespace))

	obj := &hyperv1.HostedCluster{}
	g.Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: hc.Name}, obj)).To(Succeed())
	g.Expect(obj.Labels).To(Equal(labels))
	available := apimeta.FindStatusCondition(obj.Status.Conditions, string(hyperv1.HostedClusterAvailable))
	g.Expect(available).NotTo(BeNil())
	g.Expect(available.Status).To(Equal(metav1.ConditionTrue))

	g.Expect(f.Client.Get(ctx, client.ObjectKey{Name: namespace}, &corev1.Namespace{})).To(Succeed())
	ns := &corev1.Namespace{}
	g.Expect(f.Client.Get(ctx, client.ObjectKey{Name: hcpNamespace}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(HaveKeyWithValue(simfleet.HCPNamespaceLabel, "true"))

	hcp := &hyperv1.HostedControlPlane{}
	g.Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: hcpNamespace, Name: hc.Name}, hcp)).To(Succeed())
	g.Expect(hcp.Annotations).To(HaveKeyWithValue(convoyv1alpha1.HostedClusterAnnotation, namespace+"/"+hc.Name))
}

// expectOwnAPIServer checks that the kubeconfig Secret in hc's HCP namespace reaches hc's API
// server: a write through it is seen by hc's client, and not by other's or the management one.
func expectOwnAPIServer(ctx context.Context, g Gomega, f *simfleet.Fleet, hc, other *simfleet.HostedCluster) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: hc.HCPNamespace, Name: convoyv1alpha1.KubeconfigSecretName}
	g.Expect(f.Client.Get(ctx, key, secret)).To(Succeed())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[convoyv1alpha1.KubeconfigSecretKey])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Host).To(Equal(hc.Config.Host))
	g.Expect(cfg.Host).NotTo(Equal(other.Config.Host))
	g.Expect(cfg.Host).NotTo(Equal(f.Config.Host))
	viaSecret, err := client.New(cfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "written-to-" + hc.Name}}
	g.Expect(viaSecret.Create(ctx, cm)).To(Succeed())
	g.Expect(hc.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})).To(Succeed())
	for _, elsewhere := range []client.Client{other.Client, f.Client} {
		err := elsewhere.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the write stays in its own cluster: %v", err)
	}
}

// expectKubeconfigFileReaches writes raw to a file, loads it as kubectl would, and checks that it
// selects the context name and reaches the API server at host.
func expectKubeconfigFileReaches(ctx context.Context, g Gomega, path string, raw []byte, name, host string) {
	g.Expect(os.WriteFile(path, raw, 0o600)).To(Succeed())
	kc, err := clientcmd.LoadFromFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kc.CurrentContext).To(Equal(name))
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Host).To(Equal(host))
	c, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{})).To(Succeed())
}

// childProcesses returns the names of this test process's children.
func childProcesses(g Gomega) []string {
	out, err := exec.Command("pgrep", "-l", "-P", strconv.Itoa(os.Getpid())).Output()
	var exit *exec.ExitError
	if noneMatched := errors.As(err, &exit) && exit.ExitCode() == 1; !noneMatched {
		g.Expect(err).NotTo(HaveOccurred(), "running pgrep")
	}
	var names []string
	for line := range strings.Lines(string(out)) {
		if fields := strings.Fields(line); len(fields) == 2 {
			names = append(names, fields[1])
		}
	}
	return names
}

// apiServersServing lists the kube-apiserver processes whose flags name host's port.
func apiServersServing(g Gomega, host string) []string {
	_, port, err := net.SplitHostPort(hostPort(g, host))
	g.Expect(err).NotTo(HaveOccurred())
	out, _ := exec.Command("pgrep", "-f", "kube-apiserver.*--secure-port="+port+"( |$)").Output()
	return strings.Fields(string(out))
}

// hostPort returns the host:port of a REST config's Host URL.
func hostPort(g Gomega, host string) string {
	u, err := url.Parse(host)
	g.Expect(err).NotTo(HaveOccurred())
	return u.Host
}
