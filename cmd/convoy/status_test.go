package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// update rewrites the golden files: go test ./cmd/convoy -run 'Status|Plan' -update.
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// expectGolden compares got with testdata/name, or rewrites it under -update.
func expectGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	g := NewWithT(t)
	path := filepath.Join("testdata", name)
	if *update {
		g.Expect(os.MkdirAll("testdata", 0o755)).To(Succeed())
		g.Expect(os.WriteFile(path, got, 0o644)).To(Succeed())
	}
	want, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal(string(want)), "run with -update to accept the new output")
}

func TestStatusGolden(t *testing.T) {
	cases := []struct {
		golden string
		name   string
		output string
	}{
		{golden: "status-all.txt", output: "text"},
		{golden: "status-log-collector.json", name: "log-collector", output: "json"},
		{golden: "status-metrics-forwarder.yaml", name: "metrics-forwarder", output: "yaml"},
		{golden: "status-metrics-forwarder.txt", name: "metrics-forwarder", output: "text"},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			g := NewWithT(t)
			var out bytes.Buffer
			err := runStatus(context.Background(), fixtureFleet(), &out, tc.name, statusOptions{output: tc.output})
			g.Expect(err).NotTo(HaveOccurred())
			expectGolden(t, tc.golden, out.Bytes())
		})
	}
}

func TestStatusRejectsUnknownNamesAndFormats(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	err := runStatus(context.Background(), fixtureFleet(), &out, "missing", statusOptions{output: "text"})
	g.Expect(err).To(MatchError(ContainSubstring(`"missing" not found`)))
	err = runStatus(context.Background(), fixtureFleet(), &out, "log-collector", statusOptions{output: "xml"})
	g.Expect(err).To(MatchError(ContainSubstring(`unknown output format "xml"`)))
}

func TestStatusWatchPrintsOneLinePerChangeWhenNotATerminal(t *testing.T) {
	g := NewWithT(t)
	c := fixtureFleet()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out fleet.SyncBuffer
	done := make(chan error, 1)
	opts := fleetview.WatchOptions{Name: "log-collector", Interval: 10 * time.Millisecond, Now: func() time.Time { return fixtureNow }}
	go func() { done <- fleetview.Watch(ctx, c, &out, opts) }()

	g.Eventually(out.String).Should(ContainSubstring("2/6 progressed"))
	printed := out.String()
	g.Consistently(out.String, "50ms", "10ms").Should(Equal(printed), "unchanged rounds print nothing")
	hcpkg := &convoyv1alpha1.HostedClusterPackage{}
	g.Expect(c.Get(ctx, keyOf("log-collector"), hcpkg)).To(Succeed())
	hcpkg.Status.ProgressedPackages = 3
	hcpkg.Status.Partitions[1].Progressed, hcpkg.Status.Partitions[1].State = 1, convoyv1alpha1.PartitionProgressing
	g.Expect(c.Status().Update(ctx, hcpkg)).To(Succeed())
	g.Eventually(out.String).Should(ContainSubstring("3/6 progressed"))
	cancel()
	g.Eventually(done).Should(Receive(BeNil()))

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	g.Expect(lines).To(HaveLen(2))
	g.Expect(out.String()).NotTo(ContainSubstring("\x1b["))
	expectGolden(t, "status-watch-plain.txt", []byte(out.String()))
}

func TestStatusWatchRedrawsInPlaceOnATerminal(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out fleet.SyncBuffer
	done := make(chan error, 1)
	opts := fleetview.WatchOptions{Interval: 10 * time.Millisecond, Terminal: true, Now: func() time.Time { return fixtureNow }}
	go func() { done <- fleetview.Watch(ctx, fixtureFleet(), &out, opts) }()
	g.Eventually(func() int { return strings.Count(out.String(), "\x1b[H\x1b[2J") }).Should(BeNumerically(">=", 2))
	cancel()
	g.Eventually(done).Should(Receive(BeNil()))
	g.Expect(out.String()).To(ContainSubstring("HostedClusterPackage metrics-forwarder"))
}
