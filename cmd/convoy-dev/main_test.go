package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/cmd/convoy-dev/devdemo"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// convoyBin is the convoy binary TestMain builds: the demo runs its controller as a process.
var convoyBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "convoy-dev-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if convoyBin, err = fleet.ConvoyBinary(dir); err == nil {
		code = m.Run()
	} else {
		fmt.Fprintln(os.Stderr, err)
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// runDev runs the demo as the convoy-dev command does, with the controller and the approve
// command of convoyBin.
func runDev(ctx context.Context, out io.Writer, opts devdemo.Options) error {
	opts.RunController, opts.Approve, opts.PrintSectors = controllerProcess(convoyBin), approveProcess(convoyBin), sectorsProcess(convoyBin)
	return devdemo.Run(ctx, out, opts)
}

func TestDevStartsAPartitionedFleetAndStopsCleanly(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	opts := devdemo.Options{Clusters: 3, Kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out fleet.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- runDev(ctx, &out, opts) }()

	g.Eventually(func() error { _, err := os.Stat(opts.Kubeconfig); return err }, 2*time.Minute).Should(Succeed())
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: simfleet.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	hcs := &hyperv1.HostedClusterList{}
	g.Expect(c.List(ctx, hcs)).To(Succeed())
	partitions := map[string]int{}
	for _, hc := range hcs.Items {
		partitions[hc.Labels[devdemo.PartitionLabel]]++
	}
	g.Expect(partitions).To(Equal(map[string]int{"early": 1, "normal": 1, "late": 1}))
	g.Expect(out.String()).To(ContainSubstring("export KUBECONFIG=" + opts.Kubeconfig))

	g.Expect(apiServersServing(cfg.Host)).NotTo(BeEmpty())

	cancel()
	g.Eventually(done, time.Minute).Should(Receive(BeNil()))
	g.Expect(apiServersServing(cfg.Host)).To(BeEmpty())
}

func TestDevExitAfterRolloutLeavesEveryClusterOnTheSecondRevision(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	opts := devdemo.Options{Clusters: 6, Kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"),
		ExitAfterRollout: true, AsServiceAccount: true}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out fleet.SyncBuffer
	g.Expect(runDev(ctx, &out, opts)).To(Succeed())
	g.Expect(ctx.Err()).NotTo(HaveOccurred(), "the demo ended by its timeout")

	output := out.String()
	g.Expect(output).To(ContainSubstring("The controller runs as system:serviceaccount:convoy-system:convoy-controller"))
	g.Expect(output).To(MatchRegexp(`All 6 hosted clusters run commit [0-9a-f]{12}\.`))
	orderLine := regexp.MustCompile(`(?m)^Order: (.*)$`).FindStringSubmatch(output)
	g.Expect(orderLine).To(HaveLen(2), output)
	order := strings.Fields(orderLine[1])
	g.Expect(order).To(ConsistOf("early-1", "early-2", "normal-3", "normal-4", "late-5", "late-6"))
	rank := map[string]int{"early": 0, "normal": 1, "late": 2}
	for i := 1; i < len(order); i++ {
		prev, _, _ := strings.Cut(order[i-1], "-")
		cur, _, _ := strings.Cut(order[i], "-")
		g.Expect(rank[cur]).To(BeNumerically(">=", rank[prev]), "order %v", order)
	}
	expectGatesExplained(g, output, opts.Kubeconfig)

	cfg, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(apiServersServing(cfg.Host)).To(BeEmpty())
}

// TestDevSectorsMovesACommitSectorBySector runs `convoy-dev --sectors=3 --exit-after-rollout`:
// three management clusters, each with its controller; the second commit reaches eu only after
// canary completed and soaked it, and us after eu, and the bus lists all three.
func TestDevSectorsMovesACommitSectorBySector(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	opts := devdemo.Options{Clusters: 3, Sectors: 3, Kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), ExitAfterRollout: true}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out fleet.SyncBuffer
	g.Expect(runDev(ctx, &out, opts)).To(Succeed(), out.String())
	output := out.String()
	g.Expect(output).To(MatchRegexp(`eu +Commit [0-9a-f]{12} waits for the upstream sectors: canary: mc-canary (progressing|completed)`))
	g.Expect(output).To(MatchRegexp(`us +Commit [0-9a-f]{12} waits for the upstream sectors: eu: mc-eu`))
	summary := regexp.MustCompile(`(?m)^  (canary|eu|us) +started \+ *([0-9.]+)s +completed \+ *([0-9.]+)s$`).FindAllStringSubmatch(output, -1)
	g.Expect(summary).To(HaveLen(3), output)
	for _, sector := range []string{"canary", "eu", "us"} {
		g.Expect(output).To(MatchRegexp(`(?m)^%s +mc-%s +metrics-forwarder +[0-9a-f]{7} +Completed `, sector, sector))
	}
}

// expectGatesExplained checks that the output of a demo under exitAfterRollout says when the
// first partition soaks and, for each of its two rollouts, that late waits for an approval, the
// command to type, and that the demo ran it.
func expectGatesExplained(g Gomega, output, kubeconfig string) {
	g.Expect(output).To(ContainSubstring("Soak: partition early is done; it soaks for 5s"))
	g.Expect(output).To(ContainSubstring("early=Soaking 2/2"))
	waits := regexp.MustCompile(`Approval: partition late waits for an approval of revision \S+ \(commit [0-9a-f]{12}\)\.`)
	g.Expect(waits.FindAllString(output, -1)).To(HaveLen(2), output)
	g.Expect(output).To(ContainSubstring("late=AwaitingApproval 0/2"))
	command := "  convoy approve extra-component --partition late --kubeconfig " + kubeconfig + "\n"
	g.Expect(strings.Count(output, command)).To(Equal(2), output)
	g.Expect(strings.Count(output, "--exit-after-rollout: the demo runs that command itself:")).To(Equal(2), output)
	g.Expect(strings.Count(output, "approved partition late of extra-component at revision")).To(Equal(2), output)
}

// apiServersServing lists kube-apiserver processes whose flags mention the host's port.
func apiServersServing(host string) []string {
	port := host[strings.LastIndex(strings.TrimSuffix(host, "/"), ":")+1:]
	out, _ := exec.Command("pgrep", "-f", "kube-apiserver.*--secure-port="+strings.TrimSuffix(port, "/")).Output()
	return strings.Fields(string(out))
}
