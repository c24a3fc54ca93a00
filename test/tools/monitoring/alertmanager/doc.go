// Package alertmanager holds no code: its module pins Alertmanager, whose upstream command
// `make tools` builds into bin/alertmanager (go build
// github.com/prometheus/alertmanager/cmd/alertmanager here) for the tests' monitoring servers
// (test/infrastructure/monitoring). It is apart from Prometheus's module because Prometheus
// requires a newer Alertmanager library than the command pinned here, and one module would
// build the newer one.
package alertmanager
