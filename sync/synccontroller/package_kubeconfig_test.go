package synccontroller

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// TestPackageRefusesUnsafeKubeconfigs plants kubeconfig Secrets that would run a command in
// the controller, read its files, skip TLS verification or go through a proxy: the Package is
// Stalled with a reason naming the Secret, the key, the field and the flag, the command never
// runs, and a safe kubeconfig written over it lets the Package through.
func TestPackageRefusesUnsafeKubeconfigs(t *testing.T) {
	env.Require(t)
	marker := filepath.Join(t.TempDir(), "exec-ran")
	cases := []struct {
		name, field, flag string
		edit              func(*clientcmdapi.Config)
	}{
		{"exec", "users[blue].exec", "--insecure-kubeconfig-exec", func(c *clientcmdapi.Config) {
			c.AuthInfos["blue"].Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1",
				Command: "/bin/sh", Args: []string{"-c", "touch " + marker}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		}},
		{"tokenFile", "users[blue].tokenFile", "--insecure-kubeconfig-files", func(c *clientcmdapi.Config) {
			c.AuthInfos["blue"].TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}},
		{"insecure-skip-tls-verify", "clusters[blue].insecure-skip-tls-verify", "--insecure-kubeconfig-tls", func(c *clientcmdapi.Config) {
			c.Clusters["blue"].InsecureSkipTLSVerify = true
			c.Clusters["blue"].CertificateAuthorityData = nil
		}},
		{"proxy-url", "clusters[blue].proxy-url", "--insecure-kubeconfig-proxy", func(c *clientcmdapi.Config) {
			c.Clusters["blue"].ProxyURL = "http://attacker.example:3128"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := hcpNamespace(t, blue)
			hostedNS := fleet.NewNamespaceIn(t, blue.Client)
			writeRawKubeconfig(g, ns, editedKubeconfig(g, tc.edit))
			repo := newGitSource(t, ns)
			c, err := repo.Commit("main", "one", map[string]string{
				"pkg/manifest.yaml": manifest("inside:hosted-cluster"),
				"pkg/objects.yaml":  cmYAML("inside", hostedNS, "kc", "1"),
			})
			g.Expect(err).NotTo(HaveOccurred())
			key := newPackage(t, ns, "kc", "pkg")
			g.Eventually(func(g Gomega) {
				pkg := getPackage(g, key)
				stalled := conditionOf(pkg.Status.Conditions, convoyv1alpha1.StalledCondition)
				g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(stalled.Reason).To(Equal(convoyv1alpha1.KubeconfigRefusedReason))
				g.Expect(stalled.Message).To(And(
					ContainSubstring("Secret "+ns+"/"+convoyv1alpha1.KubeconfigSecretName),
					ContainSubstring(`key "kubeconfig"`), ContainSubstring(tc.field), ContainSubstring(tc.flag)))
			}).Should(Succeed())
			_, err = os.Stat(marker)
			g.Expect(os.IsNotExist(err)).To(BeTrue(), "the exec plugin never ran")

			writeKubeconfig(g, ns, blue)
			expectAvailableAt(g, key, c)
		})
	}
}

// editedKubeconfig returns the kubeconfig of the blue hosted cluster with edit applied.
func editedKubeconfig(g Gomega, edit func(*clientcmdapi.Config)) []byte {
	raw, err := simfleet.KubeConfigFor(blue.Config, "blue")
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.Load(raw)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.AuthInfos).To(HaveKey("blue"))
	g.Expect(cfg.Clusters).To(HaveKey("blue"))
	edit(cfg)
	out, err := clientcmd.Write(*cfg)
	g.Expect(err).NotTo(HaveOccurred())
	return out
}

// writeRawKubeconfig replaces the kubeconfig of namespace's Secret with raw.
func writeRawKubeconfig(g Gomega, namespace string, raw []byte) {
	ctx := context.Background()
	secret := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: convoyv1alpha1.KubeconfigSecretName}, secret)).To(Succeed())
	secret.Data[convoyv1alpha1.KubeconfigSecretKey] = raw
	g.Expect(env.Client.Update(ctx, secret)).To(Succeed())
}
