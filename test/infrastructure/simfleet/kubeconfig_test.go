package simfleet_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

func TestKubeConfigForKeepsServerAndCredentials(t *testing.T) {
	g := NewWithT(t)
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "token", TLSClientConfig: rest.TLSClientConfig{
		CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")}}

	raw, err := simfleet.KubeConfigFor(cfg, "blue")
	g.Expect(err).NotTo(HaveOccurred())
	kc, err := clientcmd.Load(raw)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kc.CurrentContext).To(Equal("blue"))
	g.Expect(kc.Contexts).To(HaveKey("blue"))
	g.Expect(kc.Contexts["blue"].Cluster).To(Equal("blue"))
	g.Expect(kc.Contexts["blue"].AuthInfo).To(Equal("blue"))

	got, err := clientcmd.RESTConfigFromKubeConfig(raw)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Host).To(Equal(cfg.Host))
	g.Expect(got.BearerToken).To(Equal("token"))
	g.Expect(got.CAData).To(Equal([]byte("ca")))
	g.Expect(got.CertData).To(Equal([]byte("cert")))
	g.Expect(got.KeyData).To(Equal([]byte("key")))
}
