// Package deploymetrics reads the Grafana dashboard and the PrometheusRule of deploy/monitoring
// with Prometheus's own packages (model/rulefmt and promql/parser, pinned in go.mod): Load
// parses every rule and every panel query and lists the metric names they use, so that a test
// with a running controller (cmd/convoy's browser test) can check each one exists on /metrics,
// and this package's tests check that the rules parse and the alerts docs/guides/monitoring.md
// promises exist.
package deploymetrics
