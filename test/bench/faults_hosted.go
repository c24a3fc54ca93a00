package bench

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/faultnet"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// The hosted part of the fault harness: HostedClusters whose package has phases inside the
// hosted cluster, each reaching one of a few real hosted API servers through a faultnet proxy
// of its own (so that each is a cluster of its own to the controller: its own client, its own
// circuit), rolled out by a second HostedClusterPackage next to the fleet's.
const (
	// hostedFleetHCP names the HostedClusterPackage of the hosted clusters.
	hostedFleetHCP = "hosted-fleet"
	// hostedFleetPath is its package in the Git repository.
	hostedFleetPath = "packages/hosted-fleet"
	// hostedFleetLabel selects its HostedClusters.
	hostedFleetLabel = "bench.convoy.dev/hosted"
	// hostedBackends is the number of real hosted API servers behind the proxies.
	hostedBackends = 2
	// ratioBound is the acceptance, target P9 of docs/evidence/performance.md: the healthy
	// part of the fleet rolls out within 1.3× the time of an all-healthy rollout.
	ratioBound = 1.3
	// deadReportTimeout bounds the wait for every dead cluster's Package to say it is
	// unreachable, and recoverTimeout the wait for them to recover once they answer.
	deadReportTimeout = 2 * time.Minute
	recoverTimeout    = 3 * time.Minute
)

// hostedFleetBudget is the rollingUpgrade budget of the hosted clusters: all of them. A dead
// cluster's Package keeps its budget slot while it is unavailable (rule 5 of package rollout), so with a
// smaller budget the healthy ones would get fewer slots than in the all-healthy rollout, by
// design; with every target in budget, the row measures whether dead clusters hold up the
// controller. The fleet's own rollout, next to it, keeps its 10%.
var hostedFleetBudget = intstr.FromString("100%")

// hostedFleetManifest has two phases inside the hosted cluster.
const hostedFleetManifest = `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: hosted-fleet}
spec:
  phases:
  - {name: namespace, class: hosted-cluster}
  - {name: config, class: hosted-cluster}
`

// hostedFleetObjects is the template of the hosted objects: a namespace per Package, since
// several clusters share a real API server, and three ConfigMaps that change with REV.
const hostedFleetObjects = `apiVersion: v1
kind: Namespace
metadata:
  name: h-{{ .package.namespace }}
  annotations: {convoy.dev/phase: namespace}
{{- range $i := until 3 }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: agent-config-{{ $i }}
  namespace: h-{{ $.package.namespace }}
  annotations: {convoy.dev/phase: config}
data: {revision: "REV"}
{{- end }}
`

// hostedFleetFiles returns the files of the hosted clusters' package at rev.
func hostedFleetFiles(rev int) map[string]string {
	return map[string]string{
		hostedFleetPath + "/manifest.yaml":       hostedFleetManifest,
		hostedFleetPath + "/objects.yaml.gotmpl": strings.ReplaceAll(hostedFleetObjects, "REV", fmt.Sprint(rev)),
	}
}

// hostedFleet is the hosted part of the fleet.
type hostedFleet struct {
	// backends are the real hosted API servers.
	backends []*simfleet.HostedCluster
	// clusters are the HostedClusters of the hosted package, in order.
	clusters []*hostedCluster
	// namespaces are their HCP namespaces.
	namespaces map[string]bool
	// baseline is the rollout time of the healthy part with every cluster healthy.
	baseline, baselineHosted time.Duration
}

// hostedCluster is one HostedCluster of the hosted package and the proxy it is reached by.
type hostedCluster struct {
	namespace string
	backend   *simfleet.HostedCluster
	proxy     *faultnet.Proxy
}

// startHostedFleet starts the real API servers and n HostedClusters reaching them through
// proxies, creates their HostedClusterPackage and waits until it is rolled out.
func startHostedFleet(ctx context.Context, e *env, n int) (*hostedFleet, error) {
	h := &hostedFleet{namespaces: map[string]bool{}}
	var err error
	var inputs []simfleet.HostedClusterInput
	for i := range hostedBackends {
		inputs = append(inputs, simfleet.HostedClusterInput{Name: fmt.Sprintf("hosted-backend-%d", i)})
	}
	if h.backends, err = e.fleet.AddHostedClusters(ctx, inputs...); err != nil {
		return nil, err
	}
	inputs = inputs[:0]
	for i := range n {
		inputs = append(inputs, simfleet.HostedClusterInput{Name: fmt.Sprintf("hs-%04d", i),
			Labels: map[string]string{hostedFleetLabel: "true"}, WithoutAPIServer: true})
	}
	hcs, err := e.fleet.AddHostedClusters(ctx, inputs...)
	if err != nil {
		return nil, err
	}
	for i, hc := range hcs {
		c, err := h.connect(ctx, e, hc, h.backends[i%len(h.backends)])
		if err != nil {
			h.close()
			return nil, err
		}
		h.clusters = append(h.clusters, c)
		h.namespaces[hc.HCPNamespace] = true
	}
	if err := h.install(ctx, e); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

// connect puts a proxy in front of backend and writes hc's kubeconfig Secret to reach it.
func (h *hostedFleet) connect(ctx context.Context, e *env, hc, backend *simfleet.HostedCluster) (*hostedCluster, error) {
	u, err := url.Parse(backend.Config.Host)
	if err != nil {
		return nil, err
	}
	proxy, err := faultnet.NewProxy(u.Host)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(backend.Config)
	cfg.Host = "https://" + proxy.Addr()
	via := &simfleet.HostedCluster{Namespace: hc.Namespace, Name: hc.Name, HCPNamespace: hc.HCPNamespace, Config: cfg}
	if err := e.fleet.WriteKubeconfigSecret(ctx, via); err != nil {
		proxy.Close()
		return nil, err
	}
	return &hostedCluster{namespace: hc.HCPNamespace, backend: backend, proxy: proxy}, nil
}

// install creates the HostedClusterPackage of the hosted clusters and waits until every one
// of its Packages progressed at the current commit.
func (h *hostedFleet) install(ctx context.Context, e *env) error {
	hcp := &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: hostedFleetHCP},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			HostedClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{hostedFleetLabel: "true"}},
			Strategy: convoyv1alpha1.HostedClusterPackageStrategy{RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{
				MaxUnavailable: &hostedFleetBudget}},
			Template: convoyv1alpha1.PackageTemplate{Spec: packageTemplate(hostedFleetPath)},
		},
	}
	if err := e.admin.Create(ctx, hcp); err != nil {
		return fmt.Errorf("creating the HostedClusterPackage %s: %w", hostedFleetHCP, err)
	}
	_, err := e.watch.waitAll(ctx, h.namespaces, progressedAt(e.commit), rolloutTimeout)
	return err
}

// pause stops the hosted clusters' rollouts, so that the faults after them roll out the
// fleet alone.
func (h *hostedFleet) pause(ctx context.Context, e *env) error {
	patch := []byte(`{"spec":{"paused":true}}`)
	hcp := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: hostedFleetHCP}}
	return e.admin.Patch(ctx, hcp, client.RawPatch("application/merge-patch+json", patch))
}

// close stops the proxies.
func (h *hostedFleet) close() {
	for _, c := range h.clusters {
		c.proxy.Close()
	}
}

// dead returns the clusters the fault kills: one in ten blackholed, one in ten refusing.
func (h *hostedFleet) dead() (blackholed, refusing []*hostedCluster) {
	for i, c := range h.clusters {
		switch i % 10 {
		case 0:
			blackholed = append(blackholed, c)
		case 5:
			refusing = append(refusing, c)
		}
	}
	return blackholed, refusing
}

// healthyPart returns the namespaces of the fleet and of the hosted clusters not in dead.
func (h *hostedFleet) healthyPart(e *env, dead ...[]*hostedCluster) (all, hosted map[string]bool) {
	all, hosted = map[string]bool{}, map[string]bool{}
	for ns := range e.namespaces {
		all[ns] = true
	}
	for ns := range h.namespaces {
		all[ns], hosted[ns] = true, true
	}
	for _, cs := range dead {
		for _, c := range cs {
			delete(all, c.namespace)
			delete(hosted, c.namespace)
		}
	}
	return all, hosted
}

// countHostedLost returns how many objects of the hosted package are missing in the hosted
// API servers.
func (h *hostedFleet) countHostedLost(ctx context.Context) (int, error) {
	lost := 0
	for _, c := range h.clusters {
		ns := "h-" + c.namespace
		objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}}
		for i := range 3 {
			objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("agent-config-%d", i)}})
		}
		for _, o := range objs {
			err := c.backend.Client.Get(ctx, client.ObjectKeyFromObject(o), o)
			if client.IgnoreNotFound(err) != nil {
				return lost, err
			}
			if err != nil {
				lost++
			}
		}
	}
	return lost, nil
}

// reportsUnreachable reports whether the Package says its hosted cluster is unreachable.
func reportsUnreachable(p *convoyv1alpha1.Package) bool {
	avail := apimeta.FindStatusCondition(p.Status.Conditions, convoyv1alpha1.AvailableCondition)
	return avail != nil && avail.Status == metav1.ConditionFalse && avail.Reason == convoyv1alpha1.HostedClusterUnreachableReason
}

// namespacesOf returns the namespaces of cs.
func namespacesOf(cs ...[]*hostedCluster) map[string]bool {
	m := map[string]bool{}
	for _, list := range cs {
		for _, c := range list {
			m[c.namespace] = true
		}
	}
	return m
}
