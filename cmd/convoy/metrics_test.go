package main

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// TestMetricsNeedAnAuthorizedToken serves metrics as `convoy controller` does by default, on a
// real API server: no token gets 401, a ServiceAccount without the convoy-metrics-reader
// ClusterRole of deploy/ gets 403, one bound to it gets the metrics.
func TestMetricsNeedAnAuthorizedToken(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := fleet.Start(ctx, fleet.Options{WithoutHyperShift: true})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Stop() }()
	cs, err := kubernetes.NewForConfig(f.Config)
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := os.ReadFile("../../deploy/rbac/metrics_reader_role.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	objs, err := manifests.DecodeObjects("metrics_reader_role.yaml", raw)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Client.Create(ctx, objs[0])).To(Succeed())
	reader, stranger := serviceAccountToken(ctx, g, cs, "reader"), serviceAccountToken(ctx, g, cs, "stranger")
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reader-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: objs[0].GetName()},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: "reader"}},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	addr := freeAddr(g)
	httpClient, err := rest.HTTPClientFor(f.Config)
	g.Expect(err).NotTo(HaveOccurred())
	srv, err := metricsserver.NewServer(metricsOptions(addr, true), f.Config, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = srv.Start(ctx) }()

	scrape := func(token string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		g.Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		// The endpoint serves a self-signed certificate.
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // test
		resp, err := c.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	g.Eventually(func() int { return scrape(reader) }, 30*time.Second).Should(Equal(http.StatusOK))
	g.Expect(scrape("")).To(Equal(http.StatusUnauthorized))
	// Note: controller-runtime's filter answers 500 when the API server cannot review a token.
	g.Expect(scrape("not-a-token")).To(BeElementOf(http.StatusUnauthorized, http.StatusInternalServerError))
	g.Expect(scrape(stranger)).To(Equal(http.StatusForbidden))
}

// serviceAccountToken creates a ServiceAccount of namespace default and returns a token of it.
func serviceAccountToken(ctx context.Context, g Gomega, cs kubernetes.Interface, name string) string {
	_, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// freeAddr returns a local address nothing listens on.
func freeAddr(g Gomega) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer ln.Close()
	return ln.Addr().String()
}
