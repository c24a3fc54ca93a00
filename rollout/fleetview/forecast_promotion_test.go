package fleetview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// promotedSnapshot is the gated fleet of a HostedClusterPackage of sector eu, after canary
// (a day's soak) and staging (an hour's), whose head waits upstream as status says.
func promotedSnapshot(upstream ...convoyv1alpha1.UpstreamSectorStatus) *Snapshot {
	snap := gatedSnapshot(func(spec *convoyv1alpha1.HostedClusterPackageSpec) {
		spec.Promotion = &convoyv1alpha1.PromotionSpec{After: []convoyv1alpha1.UpstreamSector{
			{Sector: "canary", SoakSeconds: 86400}, {Sector: "staging", SoakSeconds: 3600}}}
	})
	snap.HostedClusterPackage.Status.Promotion = &convoyv1alpha1.PromotionStatus{Commit: strings.Repeat("b", 40),
		HeadCommit: strings.Repeat("c", 40), Upstream: upstream}
	return snap
}

func completedAt(ago time.Duration) *metav1.Time {
	t := metav1.NewTime(gatedNow.Add(-ago))
	return &t
}

func TestPlanForecastsWhenTheHeadCanEnterTheSector(t *testing.T) {
	canaryDone := convoyv1alpha1.UpstreamSectorStatus{Sector: "canary", CompletedAt: completedAt(20 * time.Hour),
		ManagementClusters: []convoyv1alpha1.ManagementClusterStatus{{Name: "mc-canary-1", State: "Completed"}}}
	stagingDone := convoyv1alpha1.UpstreamSectorStatus{Sector: "staging", CompletedAt: completedAt(30 * time.Minute),
		ManagementClusters: []convoyv1alpha1.ManagementClusterStatus{{Name: "mc-staging-1", State: "Completed"}}}
	stagingMoving := convoyv1alpha1.UpstreamSectorStatus{Sector: "staging",
		ManagementClusters: []convoyv1alpha1.ManagementClusterStatus{{Name: "mc-staging-1", State: "Completed"},
			{Name: "mc-staging-2", State: "Progressing", Progress: "1/3 partitions, 10/40 clusters"}}}
	stagingFailed := convoyv1alpha1.UpstreamSectorStatus{Sector: "staging",
		ManagementClusters: []convoyv1alpha1.ManagementClusterStatus{{Name: "mc-staging-1", State: "Failed"}}}
	for _, tc := range []struct {
		name     string
		upstream []convoyv1alpha1.UpstreamSectorStatus
		start    time.Time
		text     []string
	}{
		{name: "the last soak to end decides", upstream: []convoyv1alpha1.UpstreamSectorStatus{canaryDone, stagingDone},
			start: gatedNow.Add(4 * time.Hour),
			text: []string{"Promotion: commit cccccccccccc can start at 2026-01-02 16:00:00 UTC (in 4h)",
				"canary: mc-canary-1 completed; soak of 1d until 2026-01-02 16:00:00 UTC (in 4h)",
				"staging: mc-staging-1 completed; soak of 1h until 2026-01-02 12:30:00 UTC (in 30m)"}},
		{name: "a sector still moving", upstream: []convoyv1alpha1.UpstreamSectorStatus{canaryDone, stagingMoving},
			text: []string{"Promotion: commit cccccccccccc waits for the upstream sectors to complete it",
				"staging: mc-staging-1 completed, mc-staging-2 progressing 1/3 partitions, 10/40 clusters; then a soak of 1h"}},
		{name: "a sector that failed it", upstream: []convoyv1alpha1.UpstreamSectorStatus{canaryDone, stagingFailed},
			text: []string{"will not come through the upstream sectors (management cluster mc-staging-1 of sector staging failed it); " +
				"only `convoy promote` lets it in"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			f, err := NewForecast(promotedSnapshot(tc.upstream...), ForecastOptions{Now: gatedNow})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(f.Promotion).NotTo(BeNil())
			if tc.start.IsZero() {
				g.Expect(f.Promotion.Start).To(BeNil())
			} else {
				g.Expect(f.Promotion.Start.Time).To(BeTemporally("==", tc.start))
			}
			var out bytes.Buffer
			g.Expect(f.WriteText(&out)).To(Succeed())
			for _, line := range tc.text {
				g.Expect(out.String()).To(ContainSubstring(line))
			}
			out.Reset()
			g.Expect(f.WriteMarkdown(&out)).To(Succeed())
			g.Expect(out.String()).To(ContainSubstring("**Promotion:** commit `cccccccccccc`"))
		})
	}
	t.Run("nothing to say once the head came through", func(t *testing.T) {
		g := NewWithT(t)
		snap := promotedSnapshot(canaryDone, stagingDone)
		snap.HostedClusterPackage.Status.Promotion.Commit = snap.HostedClusterPackage.Status.Promotion.HeadCommit
		f, err := NewForecast(snap, ForecastOptions{Now: gatedNow})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(f.Promotion).To(BeNil())
	})
}
