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

// addonNamespace is the namespace of the add-on's ConfigMap in every hosted cluster.
const addonNamespace = "addon"

var (
	env      *fleet.Fleet
	servers  *monitoring.Monitoring
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

// setup starts the servers and two hosted clusters, each with the add-on's namespace.
func setup(ctx context.Context, f *fleet.Fleet) (func(), error) {
	var err error
	if servers, err = monitoring.Start(ctx, monitoring.Options{}); err != nil {
		return nil, err
	}
	teardown := func() { _ = servers.Stop() }
	clusters, err = f.AddHostedClusters(ctx,
		fleet.HostedClusterInput{Name: "east"}, fleet.HostedClusterInput{Name: "west"})
	if err != nil {
		return teardown, err
	}
	for _, hc := range clusters {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: addonNamespace}}
		if err := hc.Client.Create(ctx, ns); err != nil {
			return teardown, err
		}
	}
	return teardown, nil
}

// startExporter starts an exporter of both clusters reading ConfigMap name, scraped by
// Prometheus for the test.
func startExporter(t *testing.T, name string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	exp, err := monitoring.StartAddonExporter(monitoring.ExporterOptions{
		ConfigMapNamespace: addonNamespace, ConfigMapName: name}, monitoring.HostedClusters(clusters...)...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(servers.SetTargets(ctx, exp.Address)).To(Succeed())
	t.Cleanup(func() {
		g.Expect(servers.SetTargets(ctx)).To(Succeed())
		g.Expect(exp.Stop()).To(Succeed())
	})
}

// setErrorRatio creates or updates ConfigMap name of hc with errorRatio = value.
func setErrorRatio(g Gomega, hc *fleet.HostedCluster, name, value string) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: addonNamespace, Name: name}}
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
