package monitoring_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/monitoring"
)

// addonNamespace and healthConfigMap are where the add-on's ConfigMap is in every hosted
// cluster: the exporter's default name, in a namespace of the test's.
const (
	addonNamespace  = "addon"
	healthConfigMap = "addon-health"
)

var (
	env      *fleet.Fleet
	servers  *monitoring.Monitoring
	exporter *monitoring.AddonExporter
	clusters []*fleet.HostedCluster
)

func TestMain(m *testing.M) {
	if os.Getenv(crashEnv) != "" {
		crashWithRunningServers()
		return
	}
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	fleet.Main(m, &env, fleet.Options{}, setup)
}

// setup starts two hosted clusters with the add-on's namespace, the servers and an exporter of
// both clusters that Prometheus scrapes. The tests share them: Prometheus throttles changes of
// its targets (see SetTargets), so the tests change ConfigMaps, not targets.
func setup(ctx context.Context, f *fleet.Fleet) (func(), error) {
	var err error
	if clusters, err = f.AddHostedClusters(ctx,
		fleet.HostedClusterInput{Name: "east"}, fleet.HostedClusterInput{Name: "west"}); err != nil {
		return nil, err
	}
	for _, hc := range clusters {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: addonNamespace}}
		if err := hc.Client.Create(ctx, ns); err != nil {
			return nil, err
		}
	}
	if servers, err = monitoring.Start(ctx, monitoring.Options{}); err != nil {
		return nil, err
	}
	exporter, err = monitoring.StartAddonExporter(monitoring.ExporterOptions{ConfigMapNamespace: addonNamespace},
		monitoring.HostedClusters(clusters...)...)
	teardown := func() {
		_ = servers.Stop()
		if exporter != nil {
			_ = exporter.Stop()
		}
	}
	if err != nil {
		return teardown, err
	}
	return teardown, servers.SetTargets(ctx, exporter.Address)
}

// deleteErrorRatiosAtCleanup deletes the add-on's ConfigMaps when t ends, and waits until
// Prometheus has no series left, so that the next test starts from none.
func deleteErrorRatiosAtCleanup(t *testing.T) {
	t.Cleanup(func() {
		g := NewWithT(t)
		for _, hc := range clusters {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: addonNamespace, Name: healthConfigMap}}
			g.Expect(client.IgnoreNotFound(hc.Client.Delete(context.Background(), cm))).To(Succeed())
		}
		g.Eventually(errorRatios).Should(BeEmpty())
	})
}

// setErrorRatio creates or updates the add-on's ConfigMap of hc with errorRatio = value.
func setErrorRatio(g Gomega, hc *fleet.HostedCluster, value string) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: addonNamespace, Name: healthConfigMap}}
	err := hc.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	cm.Data = map[string]string{"errorRatio": value}
	if apierrors.IsNotFound(err) {
		g.Expect(hc.Client.Create(ctx, cm)).To(Succeed())
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hc.Client.Update(ctx, cm)).To(Succeed())
}

// errorRatios returns Prometheus's current value of the gauge per hosted cluster, checking
// that each series has the cluster's HCP namespace.
func errorRatios(g Gomega) map[string]float64 {
	samples, err := servers.Query(context.Background(), monitoring.AddonErrorRatioMetric)
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]float64{}
	for _, s := range samples {
		name := s.Metric["hosted_cluster"]
		for _, hc := range clusters {
			if hc.Name == name {
				g.Expect(s.Metric).To(HaveKeyWithValue("namespace", hc.HCPNamespace))
			}
		}
		out[name] = s.Value
	}
	return out
}
