package monitoring

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/convoy-gitops/convoy/test/infrastructure/process"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// Binary names looked up in the binary folder.
const (
	prometheusBinary   = "prometheus"
	alertmanagerBinary = "alertmanager"
)

// Binaries names the servers Start runs, as files of Options.BinaryDir: what must be built
// for it.
func Binaries() []string { return []string{prometheusBinary, alertmanagerBinary} }

// Options configure Start.
type Options struct {
	// BinaryDir holds the prometheus and alertmanager binaries; default: $CONVOY_TEST_BINARIES,
	// else the bin/ folder of the repository enclosing the working directory.
	BinaryDir string
	// Interval is Prometheus's scrape and rule evaluation interval, and its alert resend delay;
	// default 1s.
	Interval time.Duration
	// StartTimeout bounds the wait until both servers are ready; default 60s.
	StartTimeout time.Duration
	// StopTimeout bounds a polite stop before the servers are killed; default 10s.
	StopTimeout time.Duration
	// PrometheusMemoryLimit, when set, is Prometheus's GOMEMLIMIT (e.g. "256MiB"): a test that
	// sends expensive queries keeps Prometheus's heap near it rather than growing it for ever.
	PrometheusMemoryLimit string
}

// Monitoring is a running Prometheus and Alertmanager.
type Monitoring struct {
	// PrometheusURL is Prometheus's base URL, e.g. http://127.0.0.1:40123 (its HTTP API is under
	// /api/v1).
	PrometheusURL string
	// AlertmanagerURL is Alertmanager's base URL (its HTTP API is under /api/v2).
	AlertmanagerURL string

	opts Options
	dir  string
	http *http.Client

	// mu serialises the changes of the target and rule files and Stop.
	mu           sync.Mutex
	prometheus   *process.Process
	alertmanager *process.Process
	stopped      bool
}

// Start starts an Alertmanager and a Prometheus wired to it, on free ports of 127.0.0.1, and
// waits until both are ready. Prometheus has no target and no rule yet: see SetTargets and
// SetRules.
func Start(ctx context.Context, opts Options) (*Monitoring, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		m, err := startOnce(ctx, opts)
		switch {
		case err == nil:
			return m, nil
		case !errors.Is(err, process.ErrExitedEarly) || attempt == 3:
			return nil, err
		}
	}
}

func (o Options) withDefaults() (Options, error) {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 10 * time.Second
	}
	dir, err := findBinaryDir(o.BinaryDir)
	o.BinaryDir = dir
	return o, err
}

// findBinaryDir returns dir, else $CONVOY_TEST_BINARIES, else the repository's bin/, checking
// that both binaries are there.
func findBinaryDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv(simfleet.BinaryDirEnv)
	}
	if dir == "" {
		root, err := simfleet.RepositoryRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	for _, name := range Binaries() {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("%s not found in %s: run `make tools` (or set %s)", name, dir, simfleet.BinaryDirEnv)
		}
	}
	return dir, nil
}

func startOnce(ctx context.Context, opts Options) (_ *Monitoring, err error) {
	dir, err := os.MkdirTemp("", "convoy-monitoring-")
	if err != nil {
		return nil, err
	}
	m := &Monitoring{opts: opts, dir: dir, http: &http.Client{Timeout: 5 * time.Second}}
	defer func() {
		if err != nil {
			_ = m.Stop()
		}
	}()
	ports, err := process.FreePorts(2)
	if err != nil {
		return nil, err
	}
	if err := m.prepareDir(ports[1]); err != nil {
		return nil, err
	}
	if err := m.startAlertmanager(ctx, ports[1]); err != nil {
		return nil, err
	}
	return m, m.startPrometheus(ctx, ports[0])
}

// prepareDir writes both configurations, an empty target file and the empty rule folder.
func (m *Monitoring) prepareDir(alertmanagerPort int) error {
	for _, sub := range []string{targetsDir, rulesDir} {
		if err := os.Mkdir(filepath.Join(m.dir, sub), 0o700); err != nil {
			return err
		}
	}
	alertmanagerAddr := "127.0.0.1:" + strconv.Itoa(alertmanagerPort)
	if err := writeYAML(filepath.Join(m.dir, prometheusConfigFile),
		prometheusConfig(m.dir, m.opts.Interval, alertmanagerAddr)); err != nil {
		return err
	}
	if err := writeYAML(filepath.Join(m.dir, alertmanagerConfigFile), alertmanagerConfig()); err != nil {
		return err
	}
	return writeTargets(m.dir, nil)
}

func (m *Monitoring) startAlertmanager(ctx context.Context, port int) error {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := process.Start(m.opts.BinaryDir, m.dir, alertmanagerBinary, []string{
		"--config.file=" + filepath.Join(m.dir, alertmanagerConfigFile),
		"--storage.path=" + filepath.Join(m.dir, "alertmanager-data"),
		"--web.listen-address=" + addr,
		// No gossip: a single Alertmanager, and no third port to find.
		"--cluster.listen-address=",
	}, nil)
	if err != nil {
		return err
	}
	m.alertmanager, m.AlertmanagerURL = p, "http://"+addr
	return m.waitReady(ctx, p, m.AlertmanagerURL)
}

func (m *Monitoring) startPrometheus(ctx context.Context, port int) error {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := process.Start(m.opts.BinaryDir, m.dir, prometheusBinary, []string{
		"--config.file=" + filepath.Join(m.dir, prometheusConfigFile),
		"--storage.tsdb.path=" + filepath.Join(m.dir, "prometheus-data"),
		"--web.listen-address=" + addr,
		// POST /-/reload, for SetRules.
		"--web.enable-lifecycle",
		// Note: a hidden flag of Prometheus's; its default throttles target changes to one per
		// 5s, which SetTargets would wait for.
		"--scrape.discovery-reload-interval=100ms",
		// The Alertmanager sees a resolved or refreshed alert within an interval.
		"--rules.alert.resend-delay=" + m.opts.Interval.String(),
	}, m.prometheusEnv())
	if err != nil {
		return err
	}
	m.prometheus, m.PrometheusURL = p, "http://"+addr
	return m.waitReady(ctx, p, m.PrometheusURL)
}

// prometheusEnv returns what Prometheus's environment gets besides the test's: its GOMEMLIMIT.
func (m *Monitoring) prometheusEnv() []string {
	if m.opts.PrometheusMemoryLimit == "" {
		return nil
	}
	return []string{"GOMEMLIMIT=" + m.opts.PrometheusMemoryLimit}
}

// waitReady polls baseURL's /-/ready until it answers 200, p exits or StartTimeout passes.
func (m *Monitoring) waitReady(ctx context.Context, p *process.Process, baseURL string) error {
	ctx, cancel := context.WithTimeout(ctx, m.opts.StartTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if m.answers200(ctx, baseURL+"/-/ready") {
			return nil
		}
		select {
		case <-p.Exited():
			return p.ExitError()
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s; its last output:\n%s", p.Name, m.opts.StartTimeout, p.Tail(20))
		case <-tick.C:
		}
	}
}

func (m *Monitoring) answers200(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Dir returns the temporary folder of both servers: configuration, storage, and their output
// in prometheus.log and alertmanager.log, for a test that fails to point at. Stop removes it.
func (m *Monitoring) Dir() string { return m.dir }

// PIDs returns the process IDs of Prometheus and Alertmanager.
func (m *Monitoring) PIDs() []int {
	return []int{m.prometheus.PID(), m.alertmanager.PID()}
}

// Stop ends both servers, first politely, and removes their folder. It may be called twice.
func (m *Monitoring) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return nil
	}
	m.stopped = true
	m.prometheus.Stop(m.opts.StopTimeout)
	m.alertmanager.Stop(m.opts.StopTimeout)
	return os.RemoveAll(m.dir)
}
