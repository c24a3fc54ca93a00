package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

// setGatedStatus rewrites the status of log-collector in c with mutate.
func setGatedStatus(t *testing.T, c client.Client, mutate func(*convoyv1alpha1.HostedClusterPackageStatus)) {
	t.Helper()
	g := NewWithT(t)
	hcpkg := &convoyv1alpha1.HostedClusterPackage{}
	g.Expect(c.Get(context.Background(), keyOf("log-collector"), hcpkg)).To(Succeed())
	mutate(&hcpkg.Status)
	g.Expect(c.Status().Update(context.Background(), hcpkg)).To(Succeed())
}

// at is fixtureNow shifted by d, as an API time.
func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(fixtureNow.Add(d))
	return &t
}

func TestStatusShowsWhatHoldsTheRollout(t *testing.T) {
	g := NewWithT(t)
	c := fixtureFleet()
	setGatedStatus(t, c, func(st *convoyv1alpha1.HostedClusterPackageStatus) {
		st.Partitions[0].State, st.Partitions[0].Until = convoyv1alpha1.PartitionSoaking, at(3*time.Minute)
		st.Partitions[1].State = convoyv1alpha1.PartitionAwaitingApproval
		st.Partitions[2].State, st.Partitions[2].Until = convoyv1alpha1.PartitionOutsideWindow, at(26*time.Hour+30*time.Minute)
		st.Gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateSoak, Partition: "normal", Until: at(3 * time.Minute),
			Message: "partition early soaks for 10m0s after its last Package progressed"}
	})
	var out bytes.Buffer
	opts := statusOptions{output: "text", now: func() time.Time { return fixtureNow }}
	g.Expect(runStatus(context.Background(), c, &out, "log-collector", opts)).To(Succeed())
	text := out.String()
	g.Expect(text).To(ContainSubstring("Gate      Soak on partition normal until 2026-01-02 12:03:00 UTC (in 3m): partition early soaks"))
	g.Expect(text).To(MatchRegexp(`early .* Soaking until 2026-01-02 12:03:00 UTC \(in 3m\)\n`))
	g.Expect(text).To(MatchRegexp(`normal .* AwaitingApproval: convoy approve log-collector --partition normal\n`))
	g.Expect(text).To(MatchRegexp(`late .* OutsideWindow until 2026-01-03 14:30:00 UTC \(in 1d3h\)\n`))
	expectGolden(t, "status-gated.txt", out.Bytes())

	out.Reset()
	opts.output = "json"
	g.Expect(runStatus(context.Background(), c, &out, "log-collector", opts)).To(Succeed())
	var r fleetview.Report
	g.Expect(json.Unmarshal(out.Bytes(), &r)).To(Succeed())
	g.Expect(r.Gate).To(HaveField("Type", convoyv1alpha1.GateSoak))
	g.Expect(r.Partitions[0].Until).NotTo(BeNil())
}

func TestStatusShowsAnApprovalGateWithItsCommand(t *testing.T) {
	g := NewWithT(t)
	c := fixtureFleet()
	setGatedStatus(t, c, func(st *convoyv1alpha1.HostedClusterPackageStatus) {
		st.Partitions[1].State = convoyv1alpha1.PartitionAwaitingApproval
		st.Gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateApproval, Partition: "normal",
			Message: "partition normal waits for an approval of log-collector-7d2e4"}
	})
	var out bytes.Buffer
	g.Expect(runStatus(context.Background(), c, &out, "log-collector", statusOptions{output: "text"})).To(Succeed())
	snaps, err := fleetview.ReadStatus(context.Background(), c, "log-collector")
	g.Expect(err).NotTo(HaveOccurred())
	r := fleetview.NewReport(snaps[0])
	g.Expect(r.Line()).To(HaveSuffix("; gate Approval on normal (convoy approve log-collector --partition normal)"))
	g.Expect(out.String()).To(ContainSubstring("Gate      Approval on partition normal: partition normal waits for an approval " +
		"of log-collector-7d2e4; to approve: convoy approve log-collector --partition normal\n"))
}

func TestStatusShowsARejectedRevision(t *testing.T) {
	g := NewWithT(t)
	c := fixtureFleet()
	setGatedStatus(t, c, func(st *convoyv1alpha1.HostedClusterPackageStatus) {
		st.RejectedRevision = "log-collector-7d2e4"
		st.Gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateFailures, Partition: "normal",
			Message: "2 failed Packages exceed maxFailures 1"}
	})
	var out bytes.Buffer
	g.Expect(runStatus(context.Background(), c, &out, "log-collector", statusOptions{output: "text"})).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("Gate      Failures on partition normal: 2 failed Packages exceed maxFailures 1\n"))
	g.Expect(out.String()).To(ContainSubstring("Rejected  log-collector-7d2e4 (bbbbbbbbbbbb): a rollback rejected it"))

	snaps, err := fleetview.ReadStatus(context.Background(), c, "log-collector")
	g.Expect(err).NotTo(HaveOccurred())
	r := fleetview.NewReport(snaps[0])
	g.Expect(r.Line()).To(HaveSuffix("; gate Failures on normal, rejected log-collector-7d2e4"))
}

func TestShortDurationRoundsUp(t *testing.T) {
	g := NewWithT(t)
	for d, want := range map[time.Duration]string{
		0: "0s", 45 * time.Second: "45s", 3 * time.Minute: "3m", 3*time.Minute + time.Second: "4m",
		time.Hour: "1h", 80 * time.Minute: "1h20m", 48 * time.Hour: "2d", 51*time.Hour + time.Minute: "2d4h",
	} {
		g.Expect(fleetview.ShortDuration(d)).To(Equal(want), "%s", d)
	}
	g.Expect(fleetview.WhenText(fixtureNow, time.Time{})).To(Equal("2026-01-02 12:00:00 UTC"))
	g.Expect(fleetview.WhenText(fixtureNow, fixtureNow)).To(Equal("2026-01-02 12:00:00 UTC (due)"))
}
