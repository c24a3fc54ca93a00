package forgeloop

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/bench"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/forge"
	"github.com/convoy-gitops/convoy/test/infrastructure/process"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

var (
	env *fleet.Fleet
	srv *forge.Forge
)

// e2eEnv turns the package's tests on: `make e2e-forge` sets it, `make test` does not (the
// tests take minutes; test/infrastructure/forge and rollout/commitstatus run against Gitea
// there).
const e2eEnv = "CONVOY_E2E_FORGE"

// TestMain starts the fleet and Gitea once for the package (nothing under -short, nor without
// CONVOY_E2E_FORGE=1).
func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(e2eEnv) != "1" {
		_ = flag.Set("test.short", "true")
	}
	fleet.Main(m, &env, fleet.Options{}, func(ctx context.Context, _ *fleet.Fleet) (func(), error) {
		f, err := forge.Start(ctx, forge.Options{})
		if err != nil {
			return nil, err
		}
		srv = f
		return f.Stop, nil
	})
}

// loop is one run's controller and its webhook address.
type loop struct {
	ctrl *bench.Controller
	// webhook is the receiver's base URL, e.g. http://127.0.0.1:40123.
	webhook string
	// convoy is the binary.
	convoy string
}

// startLoop builds ./cmd/convoy and runs `convoy controller` with the webhook receiver on a
// free port, http:// allowed for the forge's token (Gitea listens on 127.0.0.1), and short
// commit status backoffs.
func startLoop(t *testing.T) *loop {
	t.Helper()
	g := NewWithT(t)
	root, err := simfleet.RepositoryRoot()
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	convoy := filepath.Join(dir, "convoy")
	began := time.Now()
	out, err := exec.Command("go", "build", "-o", convoy, filepath.Join(root, "cmd", "convoy")).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	t.Logf("built convoy in %s", time.Since(began).Round(time.Millisecond))
	kubeconfig, err := simfleet.KubeConfigFor(env.Config, "management")
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "kubeconfig")
	g.Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
	ports, err := process.FreePorts(1)
	g.Expect(err).NotTo(HaveOccurred())
	addr := "127.0.0.1:" + itoa(ports[0])
	c, err := bench.StartController(context.Background(), bench.ControllerInput{
		Binary: convoy, Kubeconfig: path, Dir: dir, Concurrency: 4,
		Args: []string{"--webhook-addr=" + addr, "--allow-insecure-http",
			"--commit-status-interval=50ms", "--commit-status-timeout=2s", "--commit-status-max-backoff=2s"}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Stop() })
	return &loop{ctrl: c, webhook: "http://" + addr, convoy: convoy}
}
