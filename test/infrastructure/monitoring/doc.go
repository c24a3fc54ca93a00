// Package monitoring runs the real Prometheus and Alertmanager of the tests, built from source
// by `make tools` (the test/tools/monitoring modules), and the test add-on exporter they scrape:
// the signal end of the chain commit → rollout → ConfigMap in a hosted cluster → metric → alert
// that convoy's rollout checks read.
//
// Start starts an Alertmanager and a Prometheus wired to it, as processes on free ports of
// 127.0.0.1 with their configuration, storage and logs in a temporary folder, and waits until
// both are ready. Prometheus scrapes and evaluates its rules every second; SetTargets changes
// what it scrapes (file service discovery; Prometheus throttles its changes, so a test sets its
// targets once) and SetRules its rule files (written, then a reload). Alertmanager holds every
// alert and notifies no one.
// PrometheusURL and AlertmanagerURL are what a check's address names; Query and Alerts read
// the same APIs for a test's own assertions. Stop ends both; the kernel kills them when the test
// process dies, so a test that panics or times out leaves nothing running.
//
// The add-on exporter stands in for an add-on's own metrics: at each scrape it reads a
// ConfigMap (by default addon-health, key errorRatio) in every hosted cluster it is given and
// serves convoy_test_addon_error_ratio{hosted_cluster, namespace} with the value, or no series
// for a cluster without one. So a commit that changes that ConfigMap in the add-on's package
// changes the metric of exactly the clusters the rollout has reached; SetClusters changes the
// clusters it reports as the fleet grows. It lives here, not in simfleet, because it is only
// meaningful to a Prometheus, and it reads each cluster through the client it is given.
//
//	m, err := monitoring.Start(ctx, monitoring.Options{})
//	defer m.Stop()
//	exp, err := monitoring.StartAddonExporter(monitoring.ExporterOptions{ConfigMapNamespace: "addon"},
//		monitoring.HostedClusters(hcs...)...)
//	defer exp.Stop()
//	err = m.SetTargets(ctx, exp.Address)
//	err = m.SetRules(ctx, map[string]string{"addon": `groups:
//	- name: addon
//	  rules:
//	  - alert: AddonErrorRatioHigh
//	    expr: convoy_test_addon_error_ratio > 0.1`})
package monitoring
