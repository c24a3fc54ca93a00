package synccontroller

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/faultnet"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// isolatedPackage is one Package of the isolation test, with its repository and, for the
// clusters that go dead, the proxy in front of their API server.
type isolatedPackage struct {
	key   client.ObjectKey
	repo  *gitserver.Repo
	proxy *faultnet.Proxy
}

// TestDeadHostedClustersDoNotHoldUpHealthyOnes blackholes the hosted API servers of as many
// Packages as there are workers (connections accepted, never answered), then pushes a new
// commit to every Package: the healthy ones still progress promptly, the dead ones say that
// their hosted cluster is unreachable, and they recover once their servers answer again.
func TestDeadHostedClustersDoNotHoldUpHealthyOnes(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	const workers = 4
	var dead, healthy []isolatedPackage
	for i := range workers {
		dead = append(dead, newIsolatedPackage(t, fmt.Sprintf("dead-%d", i), true))
		healthy = append(healthy, newIsolatedPackage(t, fmt.Sprintf("healthy-%d", i), false))
	}
	all := append(append([]isolatedPackage{}, dead...), healthy...)
	c1 := commitEverywhere(g, all, "1")
	for _, p := range all {
		expectAvailableAt(g, p.key, c1[p.key])
	}
	start := time.Now()
	c2 := commitEverywhere(g, all, "2")
	for _, p := range all {
		expectAvailableAt(g, p.key, c2[p.key])
	}
	allHealthy := time.Since(start)

	for _, p := range dead {
		p.proxy.SetMode(faultnet.Blackhole)
	}
	start = time.Now()
	c3 := commitEverywhere(g, all, "3")
	for _, p := range healthy {
		expectAvailableAt(g, p.key, c3[p.key])
	}
	healthyTook := time.Since(start)
	t.Logf("after a new commit: all %d Packages available in %s with every cluster healthy; the %d healthy ones in %s with %d clusters blackholed",
		len(all), allHealthy.Round(time.Millisecond), len(healthy), healthyTook.Round(time.Millisecond), len(dead))
	// Note: both include up to a second of GitSource polling; the bound allows for that.
	g.Expect(healthyTook).To(BeNumerically("<", 2*allHealthy+2*time.Second))

	for _, p := range dead {
		g.Eventually(func(g Gomega) {
			pkg := getPackage(g, p.key)
			avail := conditionOf(pkg.Status.Conditions, convoyv1alpha1.AvailableCondition)
			g.Expect(avail.Reason).To(Equal(convoyv1alpha1.HostedClusterUnreachableReason))
			g.Expect(avail.Message).To(ContainSubstring("is not answering"))
		}).Should(Succeed())
	}

	for _, p := range dead {
		p.proxy.SetMode(faultnet.Forward)
	}
	start = time.Now()
	for _, p := range dead {
		expectAvailableAt(g, p.key, c3[p.key])
	}
	t.Logf("dead Packages recovered %s after their servers came back", time.Since(start).Round(time.Millisecond))
}

// newIsolatedPackage creates an HCP namespace of blue with a GitSource and a Package of one
// hosted phase; a dead-to-be Package reaches blue through a proxy.
func newIsolatedPackage(t *testing.T, name string, proxied bool) isolatedPackage {
	t.Helper()
	g := NewWithT(t)
	ns := hcpNamespace(t, blue)
	p := isolatedPackage{repo: newGitSource(t, ns)}
	if proxied {
		proxy, err := faultnet.NewProxy(hostOf(g, blue.Config.Host))
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(proxy.Close)
		cfg := rest.CopyConfig(blue.Config)
		cfg.Host = "https://" + proxy.Addr()
		kubeconfig, err := simfleet.KubeConfigFor(cfg, name)
		g.Expect(err).NotTo(HaveOccurred())
		secret := &corev1.Secret{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: convoyv1alpha1.KubeconfigSecretName}, secret)).To(Succeed())
		secret.Data[convoyv1alpha1.KubeconfigSecretKey] = kubeconfig
		g.Expect(env.Client.Update(context.Background(), secret)).To(Succeed())
		p.proxy = proxy
	}
	p.key = newPackage(t, ns, name, "pkg", func(pkg *convoyv1alpha1.Package) {
		pkg.Spec.Interval = &metav1.Duration{Duration: 5 * time.Second}
	})
	return p
}

// commitEverywhere commits value to every Package's repository and returns the commits.
func commitEverywhere(g Gomega, pkgs []isolatedPackage, value string) map[client.ObjectKey]string {
	out := map[client.ObjectKey]string{}
	for _, p := range pkgs {
		c, err := p.repo.Commit("main", "v"+value, map[string]string{
			"pkg/manifest.yaml": manifest("inside:hosted-cluster"),
			"pkg/objects.yaml": cmYAML("inside", "default", "iso-"+p.key.Namespace, value) +
				cmYAML("inside", "default", "iso2-"+p.key.Namespace, value),
		})
		g.Expect(err).NotTo(HaveOccurred())
		out[p.key] = c
	}
	return out
}

// hostOf returns the host:port of a URL.
func hostOf(g Gomega, raw string) string {
	u, err := url.Parse(raw)
	g.Expect(err).NotTo(HaveOccurred())
	return u.Host
}
