package fleetview

import (
	"bytes"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// gatedNow is the clock of the gated fleet: a Friday, 12:00 UTC.
var gatedNow = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)

// gatedPartitions are the partitions of the gated fleet, in rollout order, two clusters each.
var gatedPartitions = []string{"early", "normal", "late"}

const gatedLabel = "example.com/risk-group"

// gatedSnapshot is a fleet of six HostedClusters, every Package progressed an hour ago on the
// current revision of "addon", about to roll out the update revision; mutate sets the gates.
// gatedUID is the UID of the gated snapshot's HostedClusterPackage.
const gatedUID = "uid-of-addon"

// gatedApproval is an approval of partition at the revision named revision of commit
// strings.Repeat(c, 40), bound to the gated snapshot's HostedClusterPackage.
func gatedApproval(partition, revision, c string) rollout.Approval {
	return rollout.Approval{Name: "a", Namespace: "fleet", HostedClusterPackageUID: gatedUID, Partition: partition,
		Revision: revision, Commit: strings.Repeat(c, 40)}
}

func gatedSnapshot(mutate func(*convoyv1alpha1.HostedClusterPackageSpec)) *Snapshot {
	template := convoyv1alpha1.PackageTemplateSpec{SourceRef: convoyv1alpha1.SourceReference{Name: "addons", Namespace: "fleet"}, Path: "addon"}
	current := rollout.Revision{Name: "addon-1", Commit: strings.Repeat("a", 40), Template: template}
	update := rollout.Revision{Name: "addon-2", Commit: strings.Repeat("b", 40), Template: template}
	one := intstr.FromInt32(1)
	h := &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: "addon", UID: gatedUID, Generation: 1},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			Partition: &convoyv1alpha1.PartitionSpec{LabelKey: gatedLabel, Order: convoyv1alpha1.PartitionOrder{Static: gatedPartitions}},
			Strategy: convoyv1alpha1.HostedClusterPackageStrategy{
				RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{MaxUnavailable: &one}},
			Template: convoyv1alpha1.PackageTemplate{Spec: template},
		},
		Status: convoyv1alpha1.HostedClusterPackageStatus{ObservedGeneration: 1, CurrentRevision: current.Name, UpdateRevision: update.Name},
	}
	if mutate != nil {
		mutate(&h.Spec)
	}
	snap := &Snapshot{HostedClusterPackage: h, Revisions: map[string]rollout.Revision{current.Name: current, update.Name: update}}
	for i, partition := range []string{"early", "early", "normal", "normal", "late", "late"} {
		name := partition + "-" + string(rune('1'+i))
		snap.HostedClusters = append(snap.HostedClusters, rollout.HostedCluster{Namespace: "clusters", Name: name,
			Labels: map[string]string{gatedLabel: partition}, Available: true})
		snap.Packages = append(snap.Packages, progressedPackage(h.Name, name, current, gatedNow.Add(-time.Hour)))
	}
	return snap
}

// progressedPackage is the Package of hcpkg for clusters/cluster, progressed at rev since at.
func progressedPackage(hcpkg, cluster string, rev rollout.Revision, at time.Time) convoyv1alpha1.Package {
	since := metav1.NewTime(at)
	return convoyv1alpha1.Package{
		ObjectMeta: metav1.ObjectMeta{Namespace: convoyv1alpha1.HostedControlPlaneNamespace("clusters", cluster), Name: hcpkg,
			Generation: 1, Labels: map[string]string{convoyv1alpha1.HostedClusterPackageLabel: hcpkg},
			Annotations: map[string]string{rollout.SpecUpdatedAtAnnotation: rollout.FormatSpecUpdatedAt(at)}},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: rev.Template, Revision: rev.Commit},
		Status: convoyv1alpha1.SyncStatus{Revision: rev.Commit, Conditions: []metav1.Condition{
			{Type: convoyv1alpha1.AvailableCondition, Status: metav1.ConditionTrue, Reason: "RevisionAvailable", ObservedGeneration: 1, LastTransitionTime: since},
			{Type: convoyv1alpha1.ProgressingCondition, Status: metav1.ConditionFalse, Reason: "Succeeded", ObservedGeneration: 1, LastTransitionTime: since},
		}},
	}
}

// withPolicy sets the policy of one partition.
func withPolicy(p convoyv1alpha1.PartitionPolicy) func(*convoyv1alpha1.HostedClusterPackageSpec) {
	return func(s *convoyv1alpha1.HostedClusterPackageSpec) {
		s.Partition.Policies = append(s.Partition.Policies, p)
	}
}

// forecastOf forecasts snap as of gatedNow.
func forecastOf(t *testing.T, snap *Snapshot) *Forecast {
	t.Helper()
	f, err := NewForecast(snap, ForecastOptions{Now: gatedNow})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return f
}

// partitionOf returns the forecast of the partition name.
func partitionOf(g Gomega, f *Forecast, name string) PartitionForecast {
	for _, p := range f.Partitions {
		if p.Name == name {
			return p
		}
	}
	g.Expect(f.Partitions).To(ContainElement(HaveField("Name", name)))
	return PartitionForecast{}
}

func TestForecastOfARolloutWithoutGatesListsNoPartitions(t *testing.T) {
	g := NewWithT(t)
	f := forecastOf(t, gatedSnapshot(nil))
	g.Expect(f.Partitions).To(BeNil())
	g.Expect(f.Blocked).To(BeEmpty())
	var out bytes.Buffer
	g.Expect(f.WriteText(&out)).To(Succeed())
	g.Expect(out.String()).NotTo(ContainSubstring("Partitions, at the earliest"))
}

func TestForecastSaysWhichPartitionsAwaitApproval(t *testing.T) {
	policy := withPolicy(convoyv1alpha1.PartitionPolicy{Name: "late", RequireApproval: true})
	cases := map[string]struct {
		approvals []rollout.Approval
		awaits    bool
	}{
		"no approval":                 {awaits: true},
		"an approval of another one":  {approvals: []rollout.Approval{gatedApproval("late", "addon-1", "a")}, awaits: true},
		"an approval of another part": {approvals: []rollout.Approval{gatedApproval("normal", "addon-2", "b")}, awaits: true},
		"an approval of another commit": {
			approvals: []rollout.Approval{gatedApproval("late", "addon-2", "c")}, awaits: true},
		"an approval of the revision": {approvals: []rollout.Approval{gatedApproval("late", "addon-2", "b")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			snap := gatedSnapshot(policy)
			snap.Approvals = tc.approvals
			f := forecastOf(t, snap)
			if !tc.awaits {
				g.Expect(f.Partitions).To(BeNil())
				return
			}
			late := partitionOf(g, f, "late")
			g.Expect(late.Waits).To(ConsistOf(Wait{Type: convoyv1alpha1.GateApproval, Command: "convoy approve addon --partition late"}))
			var out bytes.Buffer
			g.Expect(f.WriteText(&out)).To(Succeed())
			g.Expect(out.String()).To(MatchRegexp(`\n  late .*awaits approval: convoy approve addon --partition late\n`))
		})
	}
}

func TestForecastStartsAPartitionAfterThePreviousSoak(t *testing.T) {
	g := NewWithT(t)
	soak := int32(600)
	f := forecastOf(t, gatedSnapshot(func(s *convoyv1alpha1.HostedClusterPackageSpec) {
		s.Strategy.RollingUpgrade.SoakSeconds = 1800
		s.Partition.Policies = []convoyv1alpha1.PartitionPolicy{{Name: "normal", SoakSeconds: &soak}}
	}))
	g.Expect(f.Blocked).To(BeEmpty())
	early, normal, late := partitionOf(g, f, "early"), partitionOf(g, f, "normal"), partitionOf(g, f, "late")
	g.Expect(early.Start.Time).To(Equal(gatedNow))
	g.Expect(normal.Waits).To(ConsistOf(HaveField("Type", convoyv1alpha1.GateSoak)))
	g.Expect(normal.Start.Time).To(BeTemporally(">=", gatedNow.Add(30*time.Minute)), "early soaks 30m after its last Package")
	g.Expect(normal.Start.Time).To(BeTemporally("<", gatedNow.Add(35*time.Minute)))
	g.Expect(late.Start.Time).To(BeTemporally(">=", normal.Start.Add(10*time.Minute)), "normal soaks for its own 10m")
	g.Expect(late.Start.Time).To(BeTemporally("<", normal.Start.Add(15*time.Minute)))
	g.Expect(normal.Waits[0].Until.Time).To(Equal(normal.Start.Time))
}

func TestForecastStartsOnlyInsideAnAllowedWindow(t *testing.T) {
	g := NewWithT(t)
	f := forecastOf(t, gatedSnapshot(func(s *convoyv1alpha1.HostedClusterPackageSpec) {
		s.Windows = []convoyv1alpha1.RolloutWindow{{Kind: convoyv1alpha1.WindowAllow, Schedule: "0 22 * * *",
			Duration: metav1.Duration{Duration: 2 * time.Hour}, TimeZone: "Europe/Berlin"}}
	}))
	g.Expect(f.Blocked).To(BeEmpty())
	opens := time.Date(2026, 1, 2, 21, 0, 0, 0, time.UTC) // 22:00 in Berlin, in winter
	early := partitionOf(g, f, "early")
	g.Expect(early.Waits).To(ConsistOf(Wait{Type: convoyv1alpha1.GateWindow, Until: &metav1.Time{Time: opens}}))
	g.Expect(early.Start.Time).To(Equal(opens))
	var out bytes.Buffer
	g.Expect(f.WriteText(&out)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("outside its windows until 2026-01-02 21:00:00 UTC"))
}

func TestForecastStopsAtAFreezeThatNeverEnds(t *testing.T) {
	g := NewWithT(t)
	f := forecastOf(t, gatedSnapshot(func(s *convoyv1alpha1.HostedClusterPackageSpec) {
		s.Windows = []convoyv1alpha1.RolloutWindow{{Kind: convoyv1alpha1.WindowDeny, Schedule: "@hourly",
			Duration: metav1.Duration{Duration: 2 * time.Hour}}}
	}))
	g.Expect(f.Batches).To(BeEmpty())
	g.Expect(f.Blocked).To(ContainSubstring("no allowed window opens for partition early"))
}

func TestForecastOfARejectedRevisionSaysSo(t *testing.T) {
	g := NewWithT(t)
	snap := gatedSnapshot(nil)
	update := snap.Revisions["addon-2"]
	update.Rejected = true
	snap.Revisions["addon-2"] = update
	f := forecastOf(t, snap)
	g.Expect(f.Batches).To(BeEmpty(), "nothing starts at a rejected revision, and no Package is on it to move back")
	g.Expect(f.Blocked).To(HavePrefix("a rollback rejected the revision"))
}

func TestForecastGivesTheApprovalsItWaitsFor(t *testing.T) {
	g := NewWithT(t)
	f := forecastOf(t, gatedSnapshot(withPolicy(convoyv1alpha1.PartitionPolicy{Name: "normal", RequireApproval: true})))
	g.Expect(f.Blocked).To(BeEmpty())
	normal := partitionOf(g, f, "normal")
	g.Expect(normal.Waits).To(HaveLen(1), "the planner's gate and the policy name the same wait")
	g.Expect(normal.Start).NotTo(BeNil(), "the forecast assumes the approval given when asked for")
	g.Expect(partitionOf(g, f, "late").Start).NotTo(BeNil())
}

func TestForecastTextListsEachPartitionsStartAndWaits(t *testing.T) {
	g := NewWithT(t)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: gatedNow.Add(d)} }
	f := &Forecast{Name: "addon", Strategy: "rollingUpgrade maxUnavailable=1", Revision: RevisionRef{Name: "addon-2"}, now: gatedNow,
		Partitions: []PartitionForecast{
			{Name: "early", Start: at(0)},
			{Name: "normal", Start: at(30 * time.Minute), Waits: []Wait{{Type: convoyv1alpha1.GateSoak, Until: at(30 * time.Minute)}}},
			{Name: "late", Start: at(9 * time.Hour), Waits: []Wait{
				{Type: convoyv1alpha1.GateApproval, Command: ApproveCommand("addon", "late")},
				{Type: convoyv1alpha1.GateWindow, Until: at(9 * time.Hour)}}},
			{Name: "unknown"},
		}}
	var out bytes.Buffer
	g.Expect(f.WriteText(&out)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring(`
Partitions, at the earliest (every Package progresses at once, every approval is given when asked for):
  PARTITION  CAN START                         WAITS FOR
  early      now                               
  normal     2026-01-02 12:30:00 UTC (in 30m)  soak until 2026-01-02 12:30:00 UTC
  late       2026-01-02 21:00:00 UTC (in 9h)   awaits approval: convoy approve addon --partition late; outside its windows until 2026-01-02 21:00:00 UTC
  unknown    not in this forecast              
`))
	out.Reset()
	g.Expect(f.WriteMarkdown(&out)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("- **late**: 2026-01-02 21:00:00 UTC (in 9h); awaits approval: convoy approve addon --partition late;"))
}
