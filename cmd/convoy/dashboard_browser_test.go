package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/cmd/convoy-dev/devdemo"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/deploymetrics"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// Environment of the browser test.
const (
	// chromiumEnv names the browser binary; default: chromium on $PATH.
	chromiumEnv = "CONVOY_CHROMIUM"
	// screenshotsEnv is the folder the screenshots go to; default bin/screenshots/dashboard.
	screenshotsEnv = "CONVOY_SCREENSHOTS"
)

// browserFleet is a convoy-dev-style fleet: six hosted clusters over early, normal and late, the
// example GitSource and HostedClusterPackage over a local repository, and the controller.
type browserFleet struct {
	fleet *simfleet.Fleet
	repo  *gitserver.Repo
	hcpkg string
	// metricsAddr serves the controller's /metrics over plain HTTP.
	metricsAddr string
}

// brokenRelease is the bad commit: a Deployment nothing will ever run in the simulated
// management cluster, so that the first Package to get it never becomes available.
const brokenRelease = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: extra-component-broken
  annotations:
    convoy.dev/phase: deploy
spec:
  replicas: 1
  selector:
    matchLabels: {app: extra-component-broken}
  template:
    metadata:
      labels: {app: extra-component-broken}
    spec:
      containers:
      - name: broken
        image: registry.invalid/extra-component:broken
`

func TestDashboardInBrowserFollowsARolloutAndAFailure(t *testing.T) {
	fleet.RequireAPIServers(t)
	browser := requireChromium(t)
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	shots := screenshotDir(t)
	bf := startBrowserFleet(ctx, t)
	url := startDashboard(ctx, t, bf.fleet)

	page, closePage := openBrowser(ctx, t, browser)
	defer closePage()
	g.Expect(chromedp.Do(page, chromedp.Navigate(url+"#/rollout/"+bf.hcpkg), chromedp.WaitVisible(chromedp.CSS(".grid-row")),
		chromedp.Evaluate[chromedp.Void](`window.convoyNoReload = true; undefined`))).To(Succeed())
	first := waitForGrid(page, g, "", func(gr grid) bool { return gr.all(devdemo.Partitions, "progressed") })
	waitForCompletion(ctx, g, bf) // the next rollout starts from a current revision, which the page shows
	screenshot(page, g, shots, "first-rollout.png")

	commit, err := bf.repo.Commit("main", "extra-component: publish the release", map[string]string{
		"extra-component/management/release.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra-component-release\n  annotations:\n    convoy.dev/phase: deploy\ndata:\n  release: \"2\"\n"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(requestPoll(ctx, bf.fleet.Client)).To(Succeed())
	moves := followRollout(page, g, commit, shots)
	g.Expect(first.commit).NotTo(Equal(commit))
	assertPartitionOrder(g, moves)
	waitForCompletion(ctx, g, bf) // the last partition's check passes after its cells progressed
	expectConditionPills(page, g, healthyPills)

	followFailure(ctx, page, g, bf, shots)
	expectConditionPills(page, g, failedPills)

	g.Expect(chromedp.Do(page, chromedp.Click(chromedp.CSS(".cell.state-failed")), chromedp.Click(chromedp.CSS(".package-link")),
		chromedp.WaitVisible(chromedp.CSS("#last-error")))).To(Succeed())
	lastError, err := chromedp.Run(page, chromedp.Text(chromedp.CSS("#last-error")))
	g.Expect(err).NotTo(HaveOccurred())
	phases, err := chromedp.Run(page, chromedp.Text(chromedp.CSS(".phase[data-phase='deploy']")))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(lastError).To(ContainSubstring("extra-component-broken"))
	g.Expect(phases).To(ContainSubstring("not available"))
	screenshot(page, g, shots, "package.png")
	checkNarrowFleet(page, g, shots)
	t.Run("every metric of deploy/monitoring is on /metrics", func(t *testing.T) {
		checkMonitoringMetrics(NewWithT(t), bf.metricsAddr)
	})
	noReload, err := chromedp.Run(page, chromedp.Evaluate[bool](`window.convoyNoReload === true`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(noReload).To(BeTrue(), "the page was never reloaded")
}

// followFailure commits a release that never starts and checks that the page shows its first
// cluster failed, in red, with its message.
func followFailure(ctx, page context.Context, g Gomega, bf *browserFleet, shots string) {
	bad, err := bf.repo.Commit("main", "extra-component: add a component that never starts",
		map[string]string{"extra-component/management/broken.yaml": brokenRelease})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(requestPoll(ctx, bf.fleet.Client)).To(Succeed())
	waitForGrid(page, g, bad, func(gr grid) bool { return gr.count("failed") == 1 })
	g.Expect(chromedp.Do(page, chromedp.WaitVisible(chromedp.CSS(".failed-cluster")))).To(Succeed())
	failedText, err := chromedp.Run(page, chromedp.Text(chromedp.CSS(".failed-cluster")))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(failedText).To(MatchRegexp(`clusters/early-1 ProgressDeadlineExceeded: .*has not progressed`))
	color, err := chromedp.Run(page, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('.cell.state-failed')).backgroundColor`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(color).To(Equal("rgb(217, 58, 58)"), "the failed cell is red")
	screenshot(page, g, shots, "failed.png")
}

// checkNarrowFleet goes back to the fleet view by its link, at 375 px wide, and checks that
// nothing overflows sideways.
func checkNarrowFleet(page context.Context, g Gomega, shots string) {
	g.Expect(chromedp.Do(page, chromedp.EmulateViewport(375, 800), chromedp.Click(chromedp.CSS("header .brand")),
		chromedp.WaitVisible(chromedp.CSS(".hcp .stalled")))).To(Succeed())
	overflow, err := chromedp.Run(page, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(overflow).To(BeFalse(), "the fleet view overflows at 375 px")
	screenshot(page, g, shots, "fleet-375px.png")
	g.Expect(chromedp.Do(page, chromedp.EmulateViewport(1280, 1000))).To(Succeed())
}

// checkMonitoringMetrics scrapes the controller, after a rollout and a failure, and checks that
// every metric the Grafana dashboard and the alert rules use is there.
func checkMonitoringMetrics(g Gomega, addr string) {
	root, err := simfleet.RepositoryRoot()
	g.Expect(err).NotTo(HaveOccurred())
	m, err := deploymetrics.Load(filepath.Join(root, "deploy", "monitoring"))
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.Get("http://" + addr + "/metrics")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.MissingMetrics(string(body))).To(BeEmpty())
	g.Expect(string(body)).To(ContainSubstring(`convoy_resource_condition{kind="HostedClusterPackage",name="extra-component",namespace="",reason=`))
	g.Expect(string(body)).To(MatchRegexp(`convoy_rollout_check_evaluations_total\{check="smoke",hostedclusterpackage="extra-component",outcome="pass"\} [1-9]`))
}

// requireChromium returns the browser to drive, failing (never skipping) with how to install it.
func requireChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(chromiumEnv); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no Chromium found for the dashboard's browser test: install it with `apt-get install -y chromium` " +
		"(make test does so when run as root with apt), or set " + chromiumEnv + " to a Chrome or Chromium binary")
	return ""
}

// screenshotDir is where the test writes its screenshots.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		root, err := simfleet.RepositoryRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "bin", "screenshots", "dashboard")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots: %s", dir)
	return dir
}

// startBrowserFleet starts the fleet, seeds Git with examples/packages, applies the examples
// (progress deadline 20s) and runs the controller, all stopped at the end of t.
func startBrowserFleet(ctx context.Context, t *testing.T) *browserFleet {
	t.Helper()
	g := NewWithT(t)
	f, err := simfleet.Start(ctx, simfleet.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = f.Stop() })
	var inputs []simfleet.HostedClusterInput
	for i, p := range []string{"early", "early", "normal", "normal", "late", "late"} {
		inputs = append(inputs, simfleet.HostedClusterInput{Name: fmt.Sprintf("%s-%d", p, i+1),
			Labels: map[string]string{devdemo.PartitionLabel: p}})
	}
	_, err = f.AddHostedClusters(ctx, inputs...)
	g.Expect(err).NotTo(HaveOccurred())

	dir := t.TempDir()
	srv, err := gitserver.New(filepath.Join(dir, "git"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(srv.Close)
	repo, err := srv.CreateRepo("addons")
	g.Expect(err).NotTo(HaveOccurred())
	root, err := simfleet.RepositoryRoot()
	g.Expect(err).NotTo(HaveOccurred())
	files, err := gitserver.ReadTree(filepath.Join(root, "examples", "packages"), "")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = repo.Commit("main", "Add the example packages", files)
	g.Expect(err).NotTo(HaveOccurred())

	bf := &browserFleet{fleet: f, repo: repo}
	g.Expect(f.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "convoy-system"}})).To(Succeed())
	smoke := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(smoke.Close)
	objs := readExamples(g, root, srv.FileURL("addons"), smoke.URL)
	bf.hcpkg = objs[len(objs)-1].GetName()
	for _, obj := range objs {
		//nolint:staticcheck // Patch with client.Apply takes unstructured objects as they come.
		g.Expect(f.Client.Patch(ctx, obj, client.Apply, client.ForceOwnership, client.FieldOwner("browser-test"))).To(Succeed())
	}
	bf.metricsAddr = freeAddr(g)
	startTestController(t, f, filepath.Join(dir, "sources"), bf.metricsAddr)
	return bf
}

// readExamples reads the example GitSource (pointed at url) and HostedClusterPackage (with a
// progress deadline of 20s, so that the bad commit fails quickly, a soak of browserSoakSeconds
// after early and normal, so that the page shows a gate, and an HTTP check of each partition
// against checkURL, so that the checks' metrics are on /metrics).
func readExamples(g Gomega, root, url, checkURL string) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	for _, name := range []string{"gitsource.yaml", "hostedclusterpackage.yaml"} {
		path := filepath.Join(root, "examples", name)
		raw, err := os.ReadFile(path)
		g.Expect(err).NotTo(HaveOccurred())
		decoded, err := manifests.DecodeObjects(path, raw)
		g.Expect(err).NotTo(HaveOccurred())
		objs = append(objs, decoded...)
	}
	g.Expect(unstructured.SetNestedField(objs[0].Object, url, "spec", "url")).To(Succeed())
	g.Expect(unstructured.SetNestedField(objs[1].Object, int64(20), "spec", "strategy", "rollingUpgrade", "progressDeadlineSeconds")).To(Succeed())
	g.Expect(unstructured.SetNestedField(objs[1].Object, int64(browserSoakSeconds), "spec", "strategy", "rollingUpgrade", "soakSeconds")).To(Succeed())
	g.Expect(unstructured.SetNestedSlice(objs[1].Object, []any{map[string]any{"name": "smoke", "intervalSeconds": int64(1),
		"http": map[string]any{"url": checkURL}}}, "spec", "checks")).To(Succeed())
	return objs
}

// startTestController runs `convoy controller` as a process of its own (this test binary, as
// main: controller names are unique per process) with metrics served over plain HTTP on
// metricsAddr, logging to a file of the test.
func startTestController(t *testing.T, f *simfleet.Fleet, storage, metricsAddr string) {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	kubeconfig, err := f.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "kubeconfig")
	g.Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
	logFile, err := os.Create(filepath.Join(dir, "controller.log"))
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(os.Args[0], "controller", "--kubeconfig", path, "--leader-elect=false",
		"--metrics-bind-address="+metricsAddr, "--metrics-secure=false", "--health-probe-bind-address=0", "--webhook-addr=",
		"--storage-path", storage, sources.AllowFileURLsFlag, "--probe-interval=1s")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = logFile.Close()
	})
}

// startDashboard runs convoy dashboard on a free port and returns its URL.
func startDashboard(ctx context.Context, t *testing.T, f *simfleet.Fleet) string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var out fleet.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- runDashboard(ctx, f.Config, "127.0.0.1:0", &out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Log("dashboard:", err)
		}
	})
	url := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	NewWithT(t).Eventually(func() string { return url.FindString(out.String()) }, time.Minute).ShouldNot(BeEmpty())
	return url.FindString(out.String())
}

// openBrowser starts headless Chromium.
func openBrowser(ctx context.Context, t *testing.T, path string) (context.Context, func()) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1000), chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	page, cancelPage := chromedp.NewContext(alloc)
	return page, func() { cancelPage(); cancelAlloc() }
}

// followRollout records the grid at each change until commit reached every cluster, and takes
// the rollout's screenshot when a gate holds it after early and normal, with late waiting;
// no condition pill is red then: the rollout is under way, not failing.
func followRollout(page context.Context, g Gomega, commit, shots string) []grid {
	var moves []grid
	shot := false
	waitForGrid(page, g, commit, func(gr grid) bool {
		if len(moves) > 0 && fmt.Sprint(moves[len(moves)-1].states, moves[len(moves)-1].gate) == fmt.Sprint(gr.states, gr.gate) {
			return false
		}
		moves = append(moves, gr)
		if !shot && gr.gate != "" && gr.all(devdemo.Partitions[:2], "progressed") && gr.count("waiting") > 0 {
			shot = true
			screenshot(page, g, shots, "rollout.png")
			pills, err := readPills(page)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pills).NotTo(ContainElement("bad"), "a red condition while a gate holds the rollout: %v", pills)
		}
		return gr.all(devdemo.Partitions, "progressed")
	})
	g.Expect(shot).To(BeTrue(), "the page never showed a gate holding the rollout after normal: %v", moves)
	return moves
}

// waitForCompletion waits until the rollout of bf's HostedClusterPackage has completed: its
// current revision is its update revision.
func waitForCompletion(ctx context.Context, g Gomega, bf *browserFleet) {
	g.Eventually(func() bool {
		hcp := &convoyv1alpha1.HostedClusterPackage{}
		if err := bf.fleet.Client.Get(ctx, client.ObjectKey{Name: bf.hcpkg}, hcp); err != nil {
			return false
		}
		return hcp.Status.UpdateRevision != "" && hcp.Status.CurrentRevision == hcp.Status.UpdateRevision
	}, time.Minute, 200*time.Millisecond).Should(BeTrue(), "the rollout completes")
}

// assertPartitionOrder checks, over the grids seen, that a partition's cells left "waiting" only
// once every cell of the partitions before it had progressed, and that the page showed the
// rollout half-way.
func assertPartitionOrder(g Gomega, moves []grid) {
	halfWay := false
	for _, gr := range moves {
		for i, p := range devdemo.Partitions {
			started := false
			for _, s := range gr.states[p] {
				started = started || s != "waiting"
			}
			if started && i > 0 {
				g.Expect(gr.all(devdemo.Partitions[:i], "progressed")).To(BeTrue(), "partition %s moved before the earlier ones were done: %v", p, gr.states)
			}
		}
		halfWay = halfWay || (gr.count("progressed") > 0 && gr.count("waiting") > 0)
	}
	g.Expect(halfWay).To(BeTrue(), "the page never showed the rollout half-way: %v", moves)
	g.Expect(len(moves)).To(BeNumerically(">=", 3), "the grid moved without a reload")
}

// screenshot writes the page's viewport as name.
func screenshot(page context.Context, g Gomega, dir, name string) {
	png, err := chromedp.Run(page, chromedp.CaptureScreenshot())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, name), png, 0o644)).To(Succeed())
}

// requestPoll asks the example GitSource to poll now, as a webhook would.
func requestPoll(ctx context.Context, c client.Client) error {
	gs := &convoyv1alpha1.GitSource{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "convoy-system", Name: "addons"}, gs); err != nil {
		return err
	}
	patch := client.MergeFrom(gs.DeepCopy())
	if gs.Annotations == nil {
		gs.Annotations = map[string]string{}
	}
	gs.Annotations[convoyv1alpha1.RequestedAtAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	return c.Patch(ctx, gs, patch)
}
