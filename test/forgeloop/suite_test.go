package forgeloop

import (
	"context"
	"flag"
	"os"
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

// TestMain starts the fleet and Gitea once for the package (nothing under -short).
func TestMain(m *testing.M) {
	flag.Parse()
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

// startLoop builds ./cmd/convoy (or takes $CONVOY_TEST_CONVOY) and runs `convoy controller` with the webhook receiver on a
// free port, http:// allowed for the forge's token (Gitea listens on 127.0.0.1), and short
// commit status backoffs; args come last, so they override those flags.
func startLoop(t *testing.T, args ...string) *loop {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	began := time.Now()
	convoy, err := fleet.ConvoyBinary(dir)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("convoy ready in %s", time.Since(began).Round(time.Millisecond))
	kubeconfig, err := simfleet.KubeConfigFor(env.Config, "management")
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "kubeconfig")
	g.Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
	ports, err := process.FreePorts(1)
	g.Expect(err).NotTo(HaveOccurred())
	addr := "127.0.0.1:" + itoa(ports[0])
	c, err := bench.StartController(context.Background(), bench.ControllerInput{
		Binary: convoy, Kubeconfig: path, Dir: dir, Concurrency: 4,
		Args: append([]string{"--webhook-addr=" + addr, "--allow-insecure-http", "--commit-status-allow-insecure-http",
			"--commit-status-interval=50ms", "--commit-status-timeout=2s", "--commit-status-max-backoff=2s"}, args...)})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.Stop() })
	return &loop{ctrl: c, webhook: "http://" + addr, convoy: convoy}
}
