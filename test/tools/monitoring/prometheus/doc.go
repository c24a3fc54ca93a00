// Package prometheus holds no code: its module pins Prometheus, whose upstream command
// `make tools` builds into bin/prometheus (go build github.com/prometheus/prometheus/cmd/prometheus
// here) for the tests' monitoring servers (test/infrastructure/monitoring). It is a module of
// its own so that Alertmanager's requirements do not change it (see ../alertmanager).
package prometheus
