package hosted

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestRewriteHost(t *testing.T) {
	env.Require(t)
	cases := map[string]string{
		"https://kube-apiserver:6443":         "https://kube-apiserver.clusters-blue.svc:6443",
		"https://kube-apiserver":              "https://kube-apiserver.clusters-blue.svc",
		"https://kube-apiserver:6443/prefix":  "https://kube-apiserver.clusters-blue.svc:6443/prefix",
		"https://127.0.0.1:39811":             "https://127.0.0.1:39811",
		"https://kube-apiserver.example:6443": "https://kube-apiserver.example:6443",
		"https://api.blue.example.com:443":    "https://api.blue.example.com:443",
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := rewriteHost(in, "clusters-blue")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(want))
		})
	}
}

func TestRESTConfigKeepsCredentials(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	kubeconfig := []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://kube-apiserver:6443", certificate-authority-data: "` + "Y2E=" + `"}
users:
- name: u
  user: {token: secret-token}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`)
	cfg, err := RESTConfig(kubeconfig, "clusters-blue", KubeconfigPolicy{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Host).To(Equal("https://kube-apiserver.clusters-blue.svc:6443"))
	g.Expect(cfg.BearerToken).To(Equal("secret-token"))
	g.Expect(string(cfg.CAData)).To(Equal("ca"))

	_, err = RESTConfig([]byte("not: [a kubeconfig"), "x", KubeconfigPolicy{})
	g.Expect(err).To(MatchError(ContainSubstring("invalid kubeconfig")))
}

// kubeconfigWith returns a kubeconfig with extra YAML lines in its cluster and user.
func kubeconfigWith(cluster, user string) []byte {
	return []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://kube-apiserver:6443
` + cluster + `
users:
- name: u
  user:
    token: t
` + user + `
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`)
}

func TestRESTConfigPolicy(t *testing.T) {
	cases := []struct {
		name, cluster, user, field, flag string
		allow                            KubeconfigPolicy
	}{
		{name: "exec", user: "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, id]}",
			field: "users[u].exec", flag: InsecureKubeconfigExecFlag, allow: KubeconfigPolicy{AllowExec: true}},
		{name: "auth-provider", user: "    auth-provider: {name: oidc, config: {idp-issuer-url: https://x}}",
			field: "users[u].auth-provider", flag: InsecureKubeconfigExecFlag, allow: KubeconfigPolicy{AllowExec: true}},
		{name: "tokenFile", user: "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token",
			field: "users[u].tokenFile", flag: InsecureKubeconfigFilesFlag, allow: KubeconfigPolicy{AllowFiles: true}},
		{name: "client-certificate", user: "    client-certificate: /etc/cert.pem",
			field: "users[u].client-certificate", flag: InsecureKubeconfigFilesFlag, allow: KubeconfigPolicy{AllowFiles: true}},
		{name: "client-key", user: "    client-key: /etc/key.pem",
			field: "users[u].client-key", flag: InsecureKubeconfigFilesFlag, allow: KubeconfigPolicy{AllowFiles: true}},
		{name: "certificate-authority", cluster: "    certificate-authority: /etc/ca.pem",
			field: "clusters[c].certificate-authority", flag: InsecureKubeconfigFilesFlag, allow: KubeconfigPolicy{AllowFiles: true}},
		{name: "insecure-skip-tls-verify", cluster: "    insecure-skip-tls-verify: true",
			field: "clusters[c].insecure-skip-tls-verify", flag: InsecureKubeconfigTLSFlag, allow: KubeconfigPolicy{AllowInsecureTLS: true}},
		{name: "proxy-url", cluster: "    proxy-url: http://proxy.example:3128",
			field: "clusters[c].proxy-url", flag: InsecureKubeconfigProxyFlag, allow: KubeconfigPolicy{AllowProxy: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			raw := kubeconfigWith(tc.cluster, tc.user)
			_, err := RESTConfig(raw, "ns", KubeconfigPolicy{})
			g.Expect(err).To(MatchError(ErrKubeconfigRefused))
			g.Expect(err.Error()).To(And(ContainSubstring(tc.field), ContainSubstring(tc.flag)))
			// Past the policy, client-go may still find the file missing.
			_, err = RESTConfig(raw, "ns", tc.allow)
			g.Expect(errors.Is(err, ErrKubeconfigRefused)).To(BeFalse(), "the flag allows it: %v", err)
		})
	}

	t.Run("an unused user is checked too", func(t *testing.T) {
		g := NewWithT(t)
		cfg, err := clientcmd.Load(kubeconfigWith("", ""))
		g.Expect(err).NotTo(HaveOccurred())
		cfg.AuthInfos["other"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "id"}}
		g.Expect(KubeconfigPolicy{}.Check(cfg)).To(MatchError(ContainSubstring("users[other].exec")))
	})
}

// FuzzRESTConfig feeds arbitrary kubeconfigs to RESTConfig under the default policy: it never
// panics, and a config it returns never runs a plugin, reads a file, skips TLS verification
// or uses a proxy. Run: go test ./sync/hosted -short -run '^$' -fuzz FuzzRESTConfig -fuzztime 20s.
func FuzzRESTConfig(f *testing.F) {
	f.Add(kubeconfigWith("", ""))
	f.Add(kubeconfigWith("    insecure-skip-tls-verify: true", "    exec: {apiVersion: v1, command: id}"))
	f.Add(kubeconfigWith("    proxy-url: socks5://p:1", "    tokenFile: /t"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Config","users":[{"name":"u","user":{"auth-provider":{"name":"gcp"}}}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, err := RESTConfig(raw, "ns", KubeconfigPolicy{})
		if err != nil {
			return
		}
		if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.BearerTokenFile != "" ||
			cfg.CertFile != "" || cfg.KeyFile != "" || cfg.CAFile != "" || cfg.Insecure || cfg.Proxy != nil {
			t.Fatalf("unsafe config accepted from %q", raw)
		}
	})
}
