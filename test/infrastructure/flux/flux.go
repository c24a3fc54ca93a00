package flux

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/convoy-gitops/convoy/test/infrastructure/process"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// The controllers, by binary name, and the modules that pin them (relative to the repository
// root) with their module paths.
const (
	sourceController    = "source-controller"
	kustomizeController = "kustomize-controller"
	toolsDir            = "test/tools/flux"
	modulePrefix        = "github.com/fluxcd/"
)

// Binaries names the servers Start runs, as files of Options.BinaryDir: what must be built for
// them.
func Binaries() []string { return []string{sourceController, kustomizeController} }

// Options configure Start.
type Options struct {
	// BinaryDir holds the controllers; default $CONVOY_TEST_BINARIES, else the repository's
	// bin/.
	BinaryDir string
	// Kubeconfig is the path of a kubeconfig file of the API server the controllers run
	// against (required).
	Kubeconfig string
	// StartTimeout bounds the wait until each controller's health endpoint answers; default
	// 60s.
	StartTimeout time.Duration
}

// Flux is a running source-controller and kustomize-controller.
type Flux struct {
	dir   string
	procs []*process.Process
}

// CRDs returns the CustomResourceDefinitions of both controllers, as their modules ship them.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	root, err := simfleet.RepositoryRoot()
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, name := range Binaries() {
		dir, err := moduleDir(root, name)
		if err != nil {
			return nil, err
		}
		files, err := filepath.Glob(filepath.Join(dir, "config", "crd", "bases", "*.yaml"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no CRDs in %s/config/crd/bases", dir)
		}
		for _, f := range files {
			crd, err := readCRD(f)
			if err != nil {
				return nil, err
			}
			crds = append(crds, crd)
		}
	}
	return crds, nil
}

// moduleDir returns the directory of the controller's module in the module cache.
func moduleDir(root, controller string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", modulePrefix+controller)
	cmd.Dir = filepath.Join(root, toolsDir, controller)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("finding the %s module's directory (go list -m in %s): %w: %s", controller, cmd.Dir, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// readCRD reads one CRD file.
func readCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(bytes.TrimPrefix(raw, []byte("---\n")), crd); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return crd, nil
}

// Start starts source-controller (its artifacts served on a free loopback port) and
// kustomize-controller against the API server of opts.Kubeconfig, without leader election, and
// waits until both are healthy. Flux's CRDs must be installed.
func Start(ctx context.Context, opts Options) (_ *Flux, err error) {
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "convoy-flux-")
	if err != nil {
		return nil, err
	}
	f := &Flux{dir: dir}
	defer func() {
		if err != nil {
			f.Stop()
		}
	}()
	ports, err := process.FreePorts(5)
	if err != nil {
		return nil, err
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	storage := filepath.Join(dir, "storage")
	if err := os.Mkdir(storage, 0o700); err != nil {
		return nil, err
	}
	env := []string{"KUBECONFIG=" + opts.Kubeconfig, "RUNTIME_NAMESPACE=flux-system"}
	common := []string{"--enable-leader-election=false"}
	if err := f.start(ctx, opts, sourceController, addr(0), env, append(common, "--metrics-addr="+addr(1),
		"--storage-path="+storage, "--storage-addr="+addr(2), "--storage-adv-addr="+addr(2))); err != nil {
		return nil, err
	}
	if err := f.start(ctx, opts, kustomizeController, addr(3), env, append(common, "--metrics-addr="+addr(4))); err != nil {
		return nil, err
	}
	return f, nil
}

func (o Options) withDefaults() (Options, error) {
	if o.Kubeconfig == "" {
		return o, errors.New("no kubeconfig for Flux's controllers")
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.BinaryDir == "" {
		o.BinaryDir = os.Getenv(simfleet.BinaryDirEnv)
	}
	if o.BinaryDir == "" {
		root, err := simfleet.RepositoryRoot()
		if err != nil {
			return o, err
		}
		o.BinaryDir = filepath.Join(root, "bin")
	}
	for _, name := range Binaries() {
		if _, err := os.Stat(filepath.Join(o.BinaryDir, name)); err != nil {
			return o, fmt.Errorf("%s not found in %s: run `make tools` (or set %s)", name, o.BinaryDir, simfleet.BinaryDirEnv)
		}
	}
	return o, nil
}

// start runs one controller with its health endpoint on healthAddr and waits until it answers.
func (f *Flux) start(ctx context.Context, opts Options, name, healthAddr string, env, args []string) error {
	p, err := process.Start(opts.BinaryDir, f.dir, name, append(args, "--health-addr="+healthAddr), env)
	if err != nil {
		return err
	}
	f.procs = append(f.procs, p)
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+healthAddr+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.Exited():
			return p.ExitError()
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %s; its last output:\n%s", name, opts.StartTimeout, p.Tail(20))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// PIDs returns the process IDs of the controllers, for a benchmark to read their CPU time and
// memory.
func (f *Flux) PIDs() []int {
	pids := make([]int, len(f.procs))
	for i, p := range f.procs {
		pids[i] = p.PID()
	}
	return pids
}

// Log returns the last n lines a controller (by binary name) wrote.
func (f *Flux) Log(name string, n int) string {
	for _, p := range f.procs {
		if p.Name == name {
			return p.Tail(n)
		}
	}
	return ""
}

// Grep returns the lines of a controller's log that contain s.
func (f *Flux) Grep(name, s string) []string {
	raw, err := os.ReadFile(filepath.Join(f.dir, name+".log"))
	if err != nil {
		return nil
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}

// Stop stops both controllers and removes their folder.
func (f *Flux) Stop() {
	for i := len(f.procs) - 1; i >= 0; i-- {
		f.procs[i].Stop(10 * time.Second)
	}
	_ = os.RemoveAll(f.dir)
}

// InstallCRDs creates Flux's CRDs (CRDs) with c and waits until each is established.
func InstallCRDs(ctx context.Context, c client.Client) error {
	crds, err := CRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if err := c.Create(ctx, crd); err != nil {
			return fmt.Errorf("creating the CRD %s: %w", crd.Name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, crd := range crds {
			live := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(crd), live); err != nil {
				return false, err
			}
			established := false
			for _, cond := range live.Status.Conditions {
				established = established || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
			}
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
}
