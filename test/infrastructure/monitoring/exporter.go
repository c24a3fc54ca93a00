package monitoring

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// AddonErrorRatioMetric is the gauge the add-on exporter serves.
const AddonErrorRatioMetric = "convoy_test_addon_error_ratio"

// errorRatioDesc describes AddonErrorRatioMetric.
var errorRatioDesc = prometheus.NewDesc(AddonErrorRatioMetric,
	"The error ratio of a test add-on in a hosted cluster, read from a ConfigMap of that cluster at each scrape.",
	[]string{"hosted_cluster", "namespace"}, nil)

// ExporterOptions say which ConfigMap of each hosted cluster holds the add-on's error ratio.
type ExporterOptions struct {
	// ConfigMapNamespace is its namespace in the hosted cluster (required).
	ConfigMapNamespace string
	// ConfigMapName is its name; default "addon-health".
	ConfigMapName string
	// Key is its data key, whose value is a number; default "errorRatio".
	Key string
	// ReadTimeout bounds the reads of one scrape; default 500ms, under Prometheus's scrape
	// timeout.
	ReadTimeout time.Duration
}

// ExportedCluster is a hosted cluster whose add-on the exporter reports.
type ExportedCluster struct {
	// Name is the HostedCluster's name: the hosted_cluster label.
	Name string
	// Namespace is its hosted control plane namespace on the management cluster: the namespace
	// label, as on the metrics a hosted control plane's monitoring exports.
	Namespace string
	// Client reads the hosted cluster's API server.
	Client client.Reader
}

// HostedClusters lists the simulated hosted clusters for the exporter, leaving out those started
// without an API server.
func HostedClusters(hcs ...*simfleet.HostedCluster) []ExportedCluster {
	out := make([]ExportedCluster, 0, len(hcs))
	for _, hc := range hcs {
		if hc.Client != nil {
			out = append(out, ExportedCluster{Name: hc.Name, Namespace: hc.HCPNamespace, Client: hc.Client})
		}
	}
	return out
}

// AddonExporter is the test add-on's metrics endpoint: at each scrape it reads the ConfigMap of
// every hosted cluster and serves AddonErrorRatioMetric{hosted_cluster, namespace} with its
// value; a cluster whose ConfigMap is absent, unreadable or not a number has no series.
type AddonExporter struct {
	// Address is host:port, the target to give Monitoring.SetTargets.
	Address string

	opts     ExporterOptions
	server   *http.Server
	mu       sync.Mutex
	clusters []ExportedCluster
}

// StartAddonExporter serves /metrics on a free port of 127.0.0.1 for clusters.
func StartAddonExporter(opts ExporterOptions, clusters ...ExportedCluster) (*AddonExporter, error) {
	if opts.ConfigMapNamespace == "" {
		return nil, errors.New("the add-on exporter needs the ConfigMap's namespace")
	}
	opts = opts.withDefaults()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &AddonExporter{Address: l.Addr().String(), opts: opts}
	e.SetClusters(clusters...)
	registry := prometheus.NewRegistry()
	registry.MustRegister(e)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	e.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = e.server.Serve(l) }()
	return e, nil
}

func (o ExporterOptions) withDefaults() ExporterOptions {
	if o.ConfigMapName == "" {
		o.ConfigMapName = "addon-health"
	}
	if o.Key == "" {
		o.Key = "errorRatio"
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 500 * time.Millisecond
	}
	return o
}

// SetClusters replaces the clusters the exporter reports, from the next scrape on; one without
// a client has no series.
func (e *AddonExporter) SetClusters(clusters ...ExportedCluster) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clusters = nil
	for _, c := range clusters {
		if c.Client != nil {
			e.clusters = append(e.clusters, c)
		}
	}
}

// Stop closes the endpoint.
func (e *AddonExporter) Stop() error {
	return e.server.Close()
}

// Describe sends the one descriptor of the exporter.
func (e *AddonExporter) Describe(ch chan<- *prometheus.Desc) {
	ch <- errorRatioDesc
}

// Collect reads every cluster's ConfigMap, concurrently, and sends one gauge per value found.
func (e *AddonExporter) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	clusters := e.clusters
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.ReadTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range clusters {
		wg.Go(func() {
			if v, ok := e.readErrorRatio(ctx, c.Client); ok {
				ch <- prometheus.MustNewConstMetric(errorRatioDesc, prometheus.GaugeValue, v, c.Name, c.Namespace)
			}
		})
	}
	wg.Wait()
}

// readErrorRatio reads the value of the ConfigMap's key; false when it has none that parses.
func (e *AddonExporter) readErrorRatio(ctx context.Context, c client.Reader) (float64, bool) {
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: e.opts.ConfigMapNamespace, Name: e.opts.ConfigMapName}
	if err := c.Get(ctx, key, cm); err != nil {
		return 0, false
	}
	raw, ok := cm.Data[e.opts.Key]
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	return v, err == nil
}
