package hosted

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

var (
	env  *fleet.Fleet
	blue *fleet.HostedCluster
)

func TestMain(m *testing.M) {
	fleet.Main(m, &env, fleet.Options{}, func(ctx context.Context, f *fleet.Fleet) (func(), error) {
		var err error
		blue, err = f.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "blue.one", Labels: map[string]string{"tier": "gold"}})
		return nil, err
	})
}

func TestDiscover(t *testing.T) {
	env.Require(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	informers, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	go func() { _ = informers.Start(ctx) }()
	NewWithT(t).Expect(informers.WaitForCacheSync(ctx)).To(BeTrue(), "started, as a manager starts its cache before its controllers")
	discoverer := &Discoverer{Reader: informers, Informers: informers}

	for name, discover := range map[string]func(string) (*Cluster, error){
		"Discover, from the API server": func(ns string) (*Cluster, error) { return Discover(ctx, env.Client, ns) },
		"a Discoverer, from the cache":  func(ns string) (*Cluster, error) { return discoverer.Discover(ctx, ns) },
	} {
		t.Run(name, func(t *testing.T) {
			for range 2 { // the Discoverer's first call reads through the cache, which starts the informer
				g := NewWithT(t)
				hc, err := discover(blue.HCPNamespace)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(hc.Namespace).To(Equal("clusters"))
				g.Expect(hc.Name).To(Equal("blue.one"))
				g.Expect(hc.Labels).To(HaveKeyWithValue("tier", "gold"))
				g.Expect(hc.Deleting).To(BeFalse())

				_, err = discover("default")
				g.Expect(err).To(MatchError(ErrNoHostedCluster))
				g.Expect(err.Error()).To(ContainSubstring("namespace default holds no HostedControlPlane"))
			}
		})
	}
	NewWithT(t).Expect(discoverer.syncedStore(ctx)).NotTo(BeNil(), "the Discoverer reads the synced informer's store")
}

func TestClientsCacheAndRotation(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	clients := NewClients(env.Client, env.Client, Options{Scheme: env.Scheme})

	first, err := clients.Client(ctx, blue.HCPNamespace, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.List(ctx, &corev1.NamespaceList{})).To(Succeed())
	again, err := clients.Client(ctx, blue.HCPNamespace, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(first), "same Secret resourceVersion, same client")

	g.Expect(env.WriteKubeconfigSecret(ctx, blue)).To(Succeed())
	rotated, err := clients.Client(ctx, blue.HCPNamespace, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rotated).NotTo(BeIdenticalTo(first), "a rotated Secret gives a new client")
	g.Expect(rotated.List(ctx, &corev1.NamespaceList{})).To(Succeed())
	g.Expect(clients.Len()).To(Equal(1))
}

func TestClientsOverrideAndErrors(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	clients := NewClients(env.Client, env.Client, Options{Scheme: env.Scheme})
	src := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: blue.HCPNamespace, Name: convoyv1alpha1.KubeconfigSecretName}, src)).To(Succeed())
	custom := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: blue.HCPNamespace, Name: "custom-kubeconfig"},
		Data: map[string][]byte{"value": src.Data[convoyv1alpha1.KubeconfigSecretKey]}}
	g.Expect(env.Client.Create(ctx, custom)).To(Succeed())

	c, err := clients.Client(ctx, blue.HCPNamespace, &convoyv1alpha1.SecretKeyReference{Name: "custom-kubeconfig", Key: "value"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.List(ctx, &corev1.NamespaceList{})).To(Succeed())

	_, err = clients.Client(ctx, blue.HCPNamespace, &convoyv1alpha1.SecretKeyReference{Name: "custom-kubeconfig", Key: "missing"})
	g.Expect(err).To(MatchError(ErrNoKubeconfig))
	g.Expect(err.Error()).To(ContainSubstring(`has no key "missing"`))
	_, err = clients.Client(ctx, "default", nil)
	g.Expect(err).To(MatchError(ErrNoKubeconfig))
}

func TestClientsSweepIdle(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	clients := NewClients(env.Client, env.Client, Options{Scheme: env.Scheme, IdleTimeout: time.Minute})
	now := time.Now()
	clients.now = func() time.Time { return now }
	_, err := clients.Client(ctx, blue.HCPNamespace, nil)
	g.Expect(err).NotTo(HaveOccurred())

	now = now.Add(30 * time.Second)
	clients.Sweep()
	g.Expect(clients.Len()).To(Equal(1))
	now = now.Add(2 * time.Minute)
	clients.Sweep()
	g.Expect(clients.Len()).To(BeZero())
}
