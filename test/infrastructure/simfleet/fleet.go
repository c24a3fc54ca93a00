package simfleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/test/infrastructure/controlplane"
)

// BinaryDirEnv overrides where kube-apiserver and etcd are found.
const BinaryDirEnv = "CONVOY_TEST_BINARIES"

// Options configure a Fleet.
type Options struct {
	// BinaryDir holds kube-apiserver and etcd; default: $CONVOY_TEST_BINARIES, else the bin/
	// folder of the repository enclosing the working directory.
	BinaryDir string

	// WithoutHyperShift leaves out the HostedCluster and HostedControlPlane CRDs, to test what
	// happens on a management cluster without HyperShift.
	WithoutHyperShift bool

	// StartTimeout bounds the start of each API server; default 60s (2-core machines are slow
	// when several start at once).
	StartTimeout time.Duration

	// ClientQPS and ClientBurst tune the clients built for tests; default 200 and 400.
	ClientQPS   float32
	ClientBurst int
}

// Fleet is a running simulated management cluster and its hosted clusters.
type Fleet struct {
	// Config reaches the management API server as an administrator.
	Config *rest.Config
	// Client is an uncached client of the management API server.
	Client client.Client
	// Scheme knows the core kinds, convoy's and HyperShift's.
	Scheme *runtime.Scheme

	opts Options
	mgmt *controlplane.ControlPlane

	mu       sync.Mutex
	clusters map[string]*HostedCluster
}

// Start starts the management API server with the CRDs installed.
func Start(ctx context.Context, opts Options) (*Fleet, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	crds, err := CRDs()
	if opts.WithoutHyperShift {
		crds, err = ConvoyCRDs()
	}
	if err != nil {
		return nil, err
	}
	scheme := NewScheme()
	cp, err := controlplane.Start(ctx, opts.controlPlaneOptions(crds))
	if err != nil {
		return nil, fmt.Errorf("starting the management API server: %w", err)
	}
	cfg := cp.Config
	opts.tune(cfg)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = cp.Stop()
		return nil, err
	}
	return &Fleet{Config: cfg, Client: c, Scheme: scheme, opts: opts, mgmt: cp,
		clusters: map[string]*HostedCluster{}}, nil
}

// Stop stops every hosted API server, then the management one. It is safe to call twice.
func (f *Fleet) Stop() error {
	f.mu.Lock()
	clusters := f.clusters
	f.clusters = map[string]*HostedCluster{}
	f.mu.Unlock()

	var errs []error
	for _, hc := range clusters {
		errs = append(errs, hc.StopAPIServer())
	}
	if f.mgmt != nil {
		errs = append(errs, f.mgmt.Stop())
		f.mgmt = nil
	}
	return errors.Join(errs...)
}

// RestartAPIServer restarts the management kube-apiserver on the same etcd, port and
// certificates, and returns how long it was down.
func (f *Fleet) RestartAPIServer(ctx context.Context) (time.Duration, error) {
	return f.mgmt.RestartAPIServer(ctx)
}

// CompactStorage discards the management etcd's history up to its current revision (see
// controlplane.ControlPlane.CompactStorage).
func (f *Fleet) CompactStorage(ctx context.Context) error { return f.mgmt.CompactStorage(ctx) }

// ServerPIDs returns the process IDs of the management kube-apiserver and etcd, for
// benchmarks that account their CPU.
func (f *Fleet) ServerPIDs() []int { return f.mgmt.PIDs() }

// KubeConfig returns a kubeconfig file's content for the management API server.
func (f *Fleet) KubeConfig() ([]byte, error) {
	return KubeConfigFor(f.Config, "convoy-dev")
}

func (o Options) withDefaults() (Options, error) {
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.ClientQPS == 0 {
		o.ClientQPS, o.ClientBurst = 200, 400
	}
	if o.BinaryDir == "" {
		dir, err := FindBinaryDir()
		if err != nil {
			return o, err
		}
		o.BinaryDir = dir
	}
	return o, nil
}

// controlPlaneOptions returns the options of one API server with crds, using the binaries
// built by `make tools`.
func (o Options) controlPlaneOptions(crds []*apiextensionsv1.CustomResourceDefinition) controlplane.Options {
	return controlplane.Options{BinaryDir: o.BinaryDir, StartTimeout: o.StartTimeout, StopTimeout: 30 * time.Second, CRDs: crds}
}

func (o Options) tune(cfg *rest.Config) {
	cfg.QPS, cfg.Burst = o.ClientQPS, o.ClientBurst
}

// FindBinaryDir returns $CONVOY_TEST_BINARIES, or the bin/ folder of the repository enclosing
// the working directory, checking that kube-apiserver and etcd are there.
func FindBinaryDir() (string, error) {
	dir := os.Getenv(BinaryDirEnv)
	if dir == "" {
		root, err := RepositoryRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	for _, name := range controlplane.Binaries() {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("%s not found in %s: run `make tools` (or set %s)", name, dir, BinaryDirEnv)
		}
	}
	return dir, nil
}

// RepositoryRoot walks up from the working directory to the folder holding convoy's go.mod: the
// one place that finds the repository (bin/ for the API servers, examples/ for convoy-dev).
func RepositoryRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if raw, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isConvoyModule(raw) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no convoy repository above the working directory: set %s", BinaryDirEnv)
		}
		dir = parent
	}
}

func isConvoyModule(goMod []byte) bool {
	const first = "module github.com/convoy-gitops/convoy\n"
	return len(goMod) >= len(first) && string(goMod[:len(first)]) == first
}
