package devdemo

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

func TestDevClustersSpreadOverPartitionsInOrder(t *testing.T) {
	g := NewWithT(t)
	var got []string
	for _, in := range devClusters(6) {
		got = append(got, in.Name)
	}
	g.Expect(got).To(Equal([]string{"early-1", "early-2", "normal-3", "normal-4", "late-5", "late-6"}))
}

func TestCompleteMakesTheKubeconfigAbsoluteAndNeedsApproveToExitAfterRollout(t *testing.T) {
	g := NewWithT(t)
	run := func(context.Context, *rest.Config, string, io.Writer, ...string) error { return nil }
	opts := Options{Clusters: 6, Kubeconfig: "kubeconfig", Examples: "examples", RunController: run}
	g.Expect(opts.complete()).To(Succeed())
	g.Expect(filepath.IsAbs(opts.Kubeconfig)).To(BeTrue(), opts.Kubeconfig)
	g.Expect(opts.Refresh).To(Equal(250 * time.Millisecond))

	opts.ExitAfterRollout = true
	g.Expect(opts.complete()).To(MatchError(ContainSubstring("exitAfterRollout needs Approve")))
	opts.Approve = func(context.Context, string, string, string, io.Writer) error { return nil }
	g.Expect(opts.complete()).To(Succeed())

	opts.Sectors = 1
	g.Expect(opts.complete()).To(MatchError("--sectors must be from 2 to 5, got 1"))
	opts.Sectors = 3
	g.Expect(opts.complete()).To(Succeed())
}
