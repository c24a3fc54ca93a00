package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/test/fleet"
)

func TestDevStartsAPartitionedFleetAndStopsCleanly(t *testing.T) {
	g := NewWithT(t)
	opts := devOptions{clusters: 3, kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- runDev(ctx, &out, opts) }()

	g.Eventually(func() error { _, err := os.Stat(opts.kubeconfig); return err }, 2*time.Minute).Should(Succeed())
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: fleet.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	hcs := &hyperv1.HostedClusterList{}
	g.Expect(c.List(ctx, hcs)).To(Succeed())
	partitions := map[string]int{}
	for _, hc := range hcs.Items {
		partitions[hc.Labels[partitionLabel]]++
	}
	g.Expect(partitions).To(Equal(map[string]int{"early": 1, "normal": 1, "late": 1}))
	g.Expect(out.String()).To(ContainSubstring("export KUBECONFIG=" + opts.kubeconfig))

	g.Expect(apiServersServing(cfg.Host)).NotTo(BeEmpty())

	cancel()
	g.Eventually(done, time.Minute).Should(Receive(BeNil()))
	g.Expect(apiServersServing(cfg.Host)).To(BeEmpty())
}

func TestDevClustersSpreadOverPartitionsInOrder(t *testing.T) {
	g := NewWithT(t)
	var got []string
	for _, in := range devClusters(6) {
		got = append(got, in.Name)
	}
	g.Expect(got).To(Equal([]string{"early-1", "early-2", "normal-3", "normal-4", "late-5", "late-6"}))
}

// apiServersServing lists kube-apiserver processes whose flags mention the host's port.
func apiServersServing(host string) []string {
	port := host[strings.LastIndex(strings.TrimSuffix(host, "/"), ":")+1:]
	out, _ := exec.Command("pgrep", "-f", "kube-apiserver.*--secure-port="+strings.TrimSuffix(port, "/")).Output()
	return strings.Fields(string(out))
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
