package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"

	"github.com/convoy-gitops/convoy/test/infrastructure/process"
)

// Defaults of Options.
const (
	// DefaultStartTimeout is the default of Options.StartTimeout.
	DefaultStartTimeout = 60 * time.Second
	// DefaultStopTimeout is the default of Options.StopTimeout.
	DefaultStopTimeout = 30 * time.Second
	// startAttempts bounds the starts retried after a process exited early (a port race).
	startAttempts = 3
	// readyPoll is how often readiness is checked during a start.
	readyPoll = 100 * time.Millisecond
)

// The binaries Start runs from Options.BinaryDir.
const (
	etcdBinary      = "etcd"
	apiServerBinary = "kube-apiserver"
)

// Binaries names the servers a control plane runs, as files of Options.BinaryDir: what must be
// built for it (`make demo` builds these alone).
func Binaries() []string { return []string{apiServerBinary, etcdBinary} }

// Options configure a control plane.
type Options struct {
	// BinaryDir holds the kube-apiserver and etcd binaries (required).
	BinaryDir string
	// StartTimeout bounds each process's start until it is ready, and the CRDs' establishment;
	// default 60s.
	StartTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before it kills; default 30s.
	StopTimeout time.Duration
	// CRDs are created once the API server is ready; Start returns when each is established.
	CRDs []*apiextensionsv1.CustomResourceDefinition
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	// Config reaches the API server as an administrator (group system:masters).
	Config *rest.Config

	opts      Options
	dir       string
	etcd      *process.Process
	etcdURL   string
	apiServer *process.Process
	// apiServerArgs start the API server again on the same etcd, port and certificates.
	apiServerArgs []string
	stopOnce      sync.Once
}

// Start starts etcd and kube-apiserver from opts.BinaryDir and installs opts.CRDs. On failure it
// stops what it started and removes its folder.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	opts = opts.withDefaults()
	if opts.BinaryDir == "" {
		return nil, errors.New("no folder of kube-apiserver and etcd binaries given")
	}
	var err error
	for range startAttempts {
		var cp *ControlPlane
		if cp, err = startOnce(ctx, opts); err == nil {
			return cp, nil
		}
		if !errors.Is(err, process.ErrExitedEarly) || ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

func (o Options) withDefaults() Options {
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	return o
}

// startOnce makes one attempt at Start.
func startOnce(ctx context.Context, opts Options) (_ *ControlPlane, err error) {
	dir, err := os.MkdirTemp("", "convoy-controlplane-")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{opts: opts, dir: dir}
	defer func() {
		if err != nil {
			_ = cp.Stop()
		}
	}()
	creds, err := writeCredentials(dir)
	if err != nil {
		return nil, err
	}
	ports, err := process.FreePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	if err := cp.startEtcd(ctx, etcdURL, ports[1]); err != nil {
		return nil, err
	}
	if err := cp.startAPIServer(ctx, etcdURL, ports[2], creds); err != nil {
		return nil, err
	}
	return cp, cp.installCRDs(ctx)
}

// startEtcd starts etcd serving clients at clientURL and waits until it is healthy.
func (cp *ControlPlane) startEtcd(ctx context.Context, clientURL string, peerPort int) error {
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	p, err := process.Start(cp.opts.BinaryDir, cp.dir, etcdBinary, []string{
		"--name=default", "--data-dir=" + filepath.Join(cp.dir, "etcd"),
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL, "--unsafe-no-fsync=true",
	}, nil)
	if err != nil {
		return err
	}
	cp.etcd, cp.etcdURL = p, clientURL
	return cp.waitReady(ctx, p, http.DefaultClient, clientURL+"/health")
}

// startAPIServer starts kube-apiserver on etcdURL, secured by creds, and waits until it is ready.
func (cp *ControlPlane) startAPIServer(ctx context.Context, etcdURL string, port int, creds *credentials) error {
	host := "https://127.0.0.1:" + strconv.Itoa(port)
	file := func(name string) string { return filepath.Join(cp.dir, name) }
	cp.apiServerArgs = []string{
		"--etcd-servers=" + etcdURL, "--secure-port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--cert-dir=" + cp.dir,
		"--tls-cert-file=" + file("apiserver.crt"), "--tls-private-key-file=" + file("apiserver.key"),
		"--client-ca-file=" + file("ca.crt"),
		"--service-account-key-file=" + file("sa.key"), "--service-account-signing-key-file=" + file("sa.key"),
		"--service-account-issuer=" + host + "/", "--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC", "--allow-privileged=true", "--disable-admission-plugins=ServiceAccount",
	}
	cp.Config = &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{
		CAData: creds.caCert, CertData: creds.clientCert, KeyData: creds.clientKey}}
	return cp.runAPIServer(ctx)
}

// runAPIServer starts kube-apiserver with cp.apiServerArgs and waits until it is ready.
func (cp *ControlPlane) runAPIServer(ctx context.Context) error {
	p, err := process.Start(cp.opts.BinaryDir, cp.dir, apiServerBinary, cp.apiServerArgs, nil)
	if err != nil {
		return err
	}
	cp.apiServer = p
	httpClient, err := adminHTTPClient(cp.Config)
	if err != nil {
		return err
	}
	return cp.waitReady(ctx, p, httpClient, cp.Config.Host+"/readyz")
}

// restartStopTimeout bounds the graceful end of the API server in RestartAPIServer: with
// watches open, kube-apiserver otherwise takes the whole StopTimeout to exit.
const restartStopTimeout = 5 * time.Second

// RestartAPIServer stops the kube-apiserver (SIGTERM, SIGKILL after 5s) and starts it again on
// the same etcd, port and certificates, as a restart of its pod would: clients see their
// connections and watches end, then the same data. It returns once the API server is ready
// again, with how long it was down. Not safe to call concurrently with Stop.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) (time.Duration, error) {
	stopped := time.Now()
	cp.apiServer.Stop(min(cp.opts.StopTimeout, restartStopTimeout))
	err := cp.runAPIServer(ctx)
	return time.Since(stopped), err
}

// PIDs returns the process IDs of the kube-apiserver and etcd.
func (cp *ControlPlane) PIDs() []int {
	return []int{cp.apiServer.PID(), cp.etcd.PID()}
}

// adminHTTPClient returns an HTTP client that presents the administrator's certificate.
func adminHTTPClient(cfg *rest.Config) (*http.Client, error) {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig.Clone(),
		TLSHandshakeTimeout: 5 * time.Second}}, nil
}

// waitReady polls url until it answers 200, p exits, or StartTimeout passes.
func (cp *ControlPlane) waitReady(ctx context.Context, p *process.Process, c *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, cp.opts.StartTimeout)
	defer cancel()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		if ready(ctx, c, url) {
			return nil
		}
		select {
		case <-p.Exited():
			return p.ExitError()
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %s; its last output:\n%s", p.Name, cp.opts.StartTimeout, p.Tail(20))
		case <-tick.C:
		}
	}
}

// ready reports whether a GET of url answers 200.
func ready(ctx context.Context, c *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Stop stops the API server, then etcd, and removes the control plane's folder. It is safe to
// call more than once.
func (cp *ControlPlane) Stop() error {
	if cp == nil {
		return nil
	}
	var err error
	cp.stopOnce.Do(func() {
		cp.apiServer.Stop(cp.opts.StopTimeout)
		cp.etcd.Stop(cp.opts.StopTimeout)
		err = os.RemoveAll(cp.dir)
	})
	return err
}
