package sectors

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/bench"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/faultnet"
	"github.com/convoy-gitops/convoy/test/infrastructure/forge"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// Names shared by the management clusters.
const (
	addon         = "addon"
	gitSourceName = "addons"
	credentials   = "git-credentials"
	forgeToken    = "forge-token"
	packagePath   = "packages/addon"
	partitionKey  = "tier"
	// canarySoak is how long eu and us wait after both canary clusters completed a commit.
	canarySoak = 5
	// partitionSoak holds each late partition a little after its early one.
	partitionSoak = 2
)

// tiers are the partitions of each management cluster, one HostedCluster each.
var tiers = []string{"early", "late"}

// sectorMap is the repository's sectors.yaml.
const sectorMap = `apiVersion: convoy.dev/v1alpha1
kind: SectorMap
sectors:
- name: canary
  managementClusters: [mc-canary-1, mc-canary-2]
- name: eu
  managementClusters: [mc-eu-1]
- name: us
  managementClusters: [mc-us-1]
`

// packageFiles is the package at one value of its ConfigMap, with the sector map.
func packageFiles(value string) map[string]string {
	return map[string]string{
		"sectors.yaml":                 sectorMap,
		packagePath + "/manifest.yaml": "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: addon}\nspec:\n  phases:\n  - {name: deploy}\n",
		packagePath + "/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: addon-config, annotations: {convoy.dev/phase: deploy}}\n" +
			"data: {value: \"" + value + "\"}\n",
	}
}

// brokenFiles is the package with a template that cannot render.
func brokenFiles(value string) map[string]string {
	files := packageFiles(value)
	files[packagePath+"/broken.yaml.gotmpl"] = "{{ .config.missing.field }\n"
	return files
}

// managementCluster is one management cluster of the suite: its API server, its HostedClusters,
// its controller and the proxy through which that controller reaches Gitea.
type managementCluster struct {
	name, sector string
	fleet        *fleet.Fleet
	ns           string
	proxy        *faultnet.Proxy
	dir          string
	convoy       string
	kubeconfig   string
	ctrl         *bench.Controller
	restarts     int

	mu sync.Mutex
	// seen is when each commit first appeared on one of the management cluster's Packages.
	seen map[string]time.Time
}

// setUp prepares the management cluster for the repository: its namespace, two HostedClusters,
// the GitSource (through its own proxy, polled every second), the HostedClusterPackage, and its
// controller, and starts recording which commits its Packages run. The proxy starts in mode.
func setUp(ctx context.Context, t *testing.T, name, sector string, repo *gitea.Repository, mode faultnet.Mode) *managementCluster {
	t.Helper()
	g := NewWithT(t)
	m := &managementCluster{name: name, sector: sector, fleet: fleets[name], dir: t.TempDir(), seen: map[string]time.Time{}}
	m.ns = m.fleet.NewNamespace(t)
	for _, tier := range tiers {
		_, err := m.fleet.AddHostedCluster(ctx, fleet.HostedClusterInput{Namespace: m.ns, Name: name + "-" + tier,
			Labels: map[string]string{partitionKey: tier}, WithoutAPIServer: true})
		g.Expect(err).NotTo(HaveOccurred())
	}
	proxy, err := faultnet.NewProxy(strings.TrimPrefix(srv.URL, "http://"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proxy.Close)
	proxy.SetMode(mode)
	m.proxy = proxy
	m.createGitSource(ctx, t, "http://"+proxy.Addr(), repo.FullName)
	m.createHostedClusterPackage(ctx, t)
	m.convoy, err = fleet.ConvoyBinary(m.dir)
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := simfleet.KubeConfigFor(m.fleet.Config, "management")
	g.Expect(err).NotTo(HaveOccurred())
	m.kubeconfig = filepath.Join(m.dir, "kubeconfig")
	g.Expect(os.WriteFile(m.kubeconfig, kubeconfig, 0o600)).To(Succeed())
	m.start(t)
	t.Cleanup(func() { _ = m.ctrl.Stop() })
	watchCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go m.record(watchCtx)
	return m
}

// createGitSource creates the GitSource of the package repository, with Gitea's administrator
// as its credentials (the controller pushes its promotion record with them) and its commit
// statuses on Gitea, both through base, the management cluster's proxy.
func (m *managementCluster) createGitSource(ctx context.Context, t *testing.T, base, repository string) {
	g := NewWithT(t)
	g.Expect(m.fleet.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: credentials},
		StringData: map[string]string{"username": forge.Admin, "password": srv.Password}})).To(Succeed())
	g.Expect(m.fleet.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: forgeToken},
		StringData: map[string]string{"token": srv.Token}})).To(Succeed())
	g.Expect(m.fleet.Client.Create(ctx, &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: gitSourceName},
		Spec: convoyv1alpha1.GitSourceSpec{URL: base + "/" + repository + ".git", Ref: convoyv1alpha1.GitRef{Branch: "main"},
			Interval: &metav1.Duration{Duration: time.Second}, Timeout: &metav1.Duration{Duration: 10 * time.Second},
			SecretRef: &convoyv1alpha1.LocalObjectReference{Name: credentials},
			CommitStatus: &convoyv1alpha1.CommitStatus{Provider: convoyv1alpha1.CommitStatusGitea, APIURL: base,
				Repository: repository, SecretRef: convoyv1alpha1.LocalObjectReference{Name: forgeToken}}}})).To(Succeed())
}

// createHostedClusterPackage rolls the package out partition by partition, publishing its
// progress on both buses; eu and us come after canary, eu reading the promotion refs and us
// the commit statuses.
func (m *managementCluster) createHostedClusterPackage(ctx context.Context, t *testing.T) {
	hcpkg := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: addon}}
	hcpkg.Spec.HostedClusterSelector = &metav1.LabelSelector{}
	hcpkg.Spec.Partition = &convoyv1alpha1.PartitionSpec{LabelKey: partitionKey,
		Order: convoyv1alpha1.PartitionOrder{Static: tiers}}
	hcpkg.Spec.Strategy.RollingUpgrade = &convoyv1alpha1.RollingUpgradeStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		ProgressDeadlineSeconds: ptr.To(int32(10)), SoakSeconds: partitionSoak}
	hcpkg.Spec.Template.Spec.SourceRef = convoyv1alpha1.SourceReference{Name: gitSourceName, Namespace: m.ns}
	hcpkg.Spec.Template.Spec.Path = packagePath
	hcpkg.Spec.Promotion = &convoyv1alpha1.PromotionSpec{Publish: true}
	if m.sector != "canary" {
		hcpkg.Spec.Promotion.After = []convoyv1alpha1.UpstreamSector{{Sector: "canary", SoakSeconds: canarySoak}}
	}
	if m.sector == "us" {
		hcpkg.Spec.Promotion.Bus = convoyv1alpha1.PromotionBusCommitStatuses
	}
	NewWithT(t).Expect(m.fleet.Client.Create(ctx, hcpkg)).To(Succeed())
}

// setPartitionSoak changes how long the HostedClusterPackage's partitions soak (no new revision:
// the strategy is not part of the template).
func (m *managementCluster) setPartitionSoak(ctx context.Context, t *testing.T, seconds int32) {
	t.Helper()
	g := NewWithT(t)
	h := m.hcpkg(g)
	patch := client.MergeFrom(h.DeepCopy())
	h.Spec.Strategy.RollingUpgrade.SoakSeconds = seconds
	g.Expect(m.fleet.Client.Patch(ctx, h, patch)).To(Succeed())
}

// start starts the management cluster's controller (again, after a kill).
func (m *managementCluster) start(t *testing.T) {
	t.Helper()
	c, err := bench.StartController(context.Background(), bench.ControllerInput{
		Binary: m.convoy, Kubeconfig: m.kubeconfig, Dir: m.dir, Concurrency: 4, Restart: m.restarts,
		Args: []string{"--management-cluster=" + m.name, "--sector=" + m.sector, "--allow-insecure-http",
			"--promotion-publish-interval=200ms", "--promotion-publish-timeout=10s",
			"--commit-status-allow-insecure-http", "--commit-status-interval=100ms", "--commit-status-read-interval=1s"}})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	m.ctrl = c
	m.restarts++
}

// record notes, every 50 ms, the commits the Packages are pinned to, with when each was first
// seen, until ctx ends.
func (m *managementCluster) record(ctx context.Context) {
	for ctx.Err() == nil {
		pkgs := &convoyv1alpha1.PackageList{}
		if err := m.fleet.Client.List(ctx, pkgs, client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: addon}); err == nil {
			m.mu.Lock()
			for _, p := range pkgs.Items {
				if _, ok := m.seen[p.Spec.Revision]; !ok && p.Spec.Revision != "" {
					m.seen[p.Spec.Revision] = time.Now()
				}
			}
			m.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// firstSeen returns when a Package of the management cluster was first pinned to commit.
func (m *managementCluster) firstSeen(commit string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.seen[commit]
	return at, ok
}

// expectRunning waits until both Packages run commit and the HostedClusterPackage is Ready.
func (m *managementCluster) expectRunning(ctx context.Context, t *testing.T, commit string, within time.Duration) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		pkgs := &convoyv1alpha1.PackageList{}
		g.Expect(m.fleet.Client.List(ctx, pkgs, client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: addon})).To(Succeed())
		g.Expect(pkgs.Items).To(HaveLen(len(tiers)))
		for _, p := range pkgs.Items {
			g.Expect(p.Status.Revision).To(Equal(commit), "%s: %s", m.name, p.Namespace)
		}
		h := m.hcpkg(g)
		g.Expect(h.Status.CurrentRevision).To(Equal(h.Status.UpdateRevision), m.name)
	}).WithTimeout(within).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// hcpkg reads the HostedClusterPackage.
func (m *managementCluster) hcpkg(g Gomega) *convoyv1alpha1.HostedClusterPackage {
	h := &convoyv1alpha1.HostedClusterPackage{}
	g.Expect(m.fleet.Client.Get(context.Background(), client.ObjectKey{Name: addon}, h)).To(Succeed())
	return h
}

// commits returns the commits the management cluster's Packages were ever pinned to.
func (m *managementCluster) commits() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.seen))
	for c := range m.seen {
		out = append(out, c)
	}
	return out
}

func (m *managementCluster) String() string { return fmt.Sprintf("%s (%s)", m.name, m.sector) }
