package hosted

import (
	"testing"

	. "github.com/onsi/gomega"
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
	cfg, err := RESTConfig(kubeconfig, "clusters-blue")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Host).To(Equal("https://kube-apiserver.clusters-blue.svc:6443"))
	g.Expect(cfg.BearerToken).To(Equal("secret-token"))
	g.Expect(string(cfg.CAData)).To(Equal("ca"))

	_, err = RESTConfig([]byte("not: [a kubeconfig"), "x")
	g.Expect(err).To(MatchError(ContainSubstring("invalid kubeconfig")))
}
