package fleet_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

var env *fleet.Fleet

func TestMain(m *testing.M) {
	fleet.Main(m, &env, fleet.Options{}, nil)
}

func TestHostedClusterIsReachableThroughItsKubeconfigSecret(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	hc, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{
		Name: "blue.one", Labels: map[string]string{"hypershift.openshift.io/risk-group": "early"}})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { g.Expect(hc.StopAPIServer()).To(Succeed()) }()
	g.Expect(hc.HCPNamespace).To(Equal("clusters-blue-one"))

	hcp := &hyperv1.HostedControlPlane{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: hc.HCPNamespace, Name: "blue.one"}, hcp)).To(Succeed())
	g.Expect(hcp.Annotations).To(HaveKeyWithValue(convoyv1alpha1.HostedClusterAnnotation, "clusters/blue.one"))

	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: hc.HCPNamespace, Name: convoyv1alpha1.KubeconfigSecretName}, secret)).To(Succeed())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[convoyv1alpha1.KubeconfigSecretKey])
	g.Expect(err).NotTo(HaveOccurred())
	hosted, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"}}
	g.Expect(hosted.Create(ctx, cm)).To(Succeed())
	// The object exists in the hosted API server, not on the management one.
	g.Expect(hc.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})).NotTo(Succeed())
}

func TestHostedClusterAvailableConditionIsSettable(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	hc, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "green", WithoutAPIServer: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(availability(ctx, g, hc)).To(Equal(metav1.ConditionTrue))

	g.Expect(env.SetAvailable(ctx, hc, false)).To(Succeed())
	g.Expect(availability(ctx, g, hc)).To(Equal(metav1.ConditionFalse))

	g.Expect(env.SetAvailable(ctx, hc, true)).To(Succeed())
	g.Expect(availability(ctx, g, hc)).To(Equal(metav1.ConditionTrue))
}

func TestDeletionLeavesTheHostedClusterDeletingAndItsServerGone(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	hc, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "red"})
	g.Expect(err).NotTo(HaveOccurred())
	host := hc.Config.Host
	g.Expect(serverProcesses(host)).NotTo(BeEmpty())

	g.Expect(env.BeginDeletion(ctx, hc)).To(Succeed())
	obj := &hyperv1.HostedCluster{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: hc.Name}, obj)).To(Succeed())
	g.Expect(obj.DeletionTimestamp).NotTo(BeNil())
	g.Expect(serverProcesses(host)).To(BeEmpty())

	g.Expect(env.FinishDeletion(ctx, hc)).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: hc.Name}, obj)
	}).Should(MatchError(ContainSubstring("not found")))
}

func TestStopLeavesNoProcess(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	ctx := context.Background()
	other, err := fleet.Start(ctx, fleet.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	hcs, err := other.AddHostedClusters(ctx,
		fleet.HostedClusterInput{Name: "a"}, fleet.HostedClusterInput{Name: "b"})
	g.Expect(err).NotTo(HaveOccurred())
	hosts := []string{other.Config.Host, hcs[0].Config.Host, hcs[1].Config.Host}

	g.Expect(other.Stop()).To(Succeed())
	g.Expect(other.Stop()).To(Succeed(), "Stop is idempotent")
	for _, host := range hosts {
		g.Eventually(func() []string { return serverProcesses(host) }, 10*time.Second).Should(BeEmpty())
	}
}

// crashEnv makes the test binary, re-executed by TestCrashedTestLeavesNoProcess, start a fleet,
// print its API servers' addresses and die without cleaning up.
const crashEnv = "FLEET_TEST_CRASH"

func TestCrashedTestLeavesNoProcess(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	if os.Getenv(crashEnv) != "" {
		crashWithRunningFleet()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashedTestLeavesNoProcess$")
	cmd.Env = append(os.Environ(), crashEnv+"=1")
	out, _ := cmd.Output()
	hosts := strings.Fields(string(out))
	g.Expect(hosts).To(HaveLen(2), "the child prints the management and hosted API server addresses")
	for _, host := range hosts {
		g.Eventually(func() []string { return serverProcesses(host) }, 10*time.Second).Should(BeEmpty())
	}
}

func crashWithRunningFleet() {
	ctx := context.Background()
	f, err := fleet.Start(ctx, fleet.Options{})
	if err != nil {
		os.Exit(3)
	}
	hc, err := f.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "doomed"})
	if err != nil {
		os.Exit(3)
	}
	fmt.Println(f.Config.Host, hc.Config.Host)
	_ = syscallKill()
}

func availability(ctx context.Context, g Gomega, hc *fleet.HostedCluster) metav1.ConditionStatus {
	obj := &hyperv1.HostedCluster{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: hc.Name}, obj)).To(Succeed())
	c := apimeta.FindStatusCondition(obj.Status.Conditions, string(hyperv1.HostedClusterAvailable))
	g.Expect(c).NotTo(BeNil())
	return c.Status
}

// serverProcesses lists kube-apiserver processes serving the given https://host:port.
func serverProcesses(host string) []string {
	u, err := url.Parse(host)
	if err != nil || u.Port() == "" {
		panic("no port in " + host)
	}
	port := u.Port()
	out, _ := exec.Command("pgrep", "-f", "kube-apiserver.*--secure-port="+port).Output()
	return strings.Fields(string(out))
}
