package dashboard

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

func TestFleetItemCarriesTheGateAndTheApprovalCommands(t *testing.T) {
	g := NewWithT(t)
	until := metav1.NewTime(time.Date(2026, 1, 2, 12, 3, 0, 0, time.UTC))
	h := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon"}}
	h.Status.Partitions = []convoyv1alpha1.PartitionStatus{
		{Name: "early", State: convoyv1alpha1.PartitionSoaking, Until: &until},
		{Name: "normal", State: convoyv1alpha1.PartitionAwaitingApproval},
		{Name: "late", State: convoyv1alpha1.PartitionPending},
	}
	h.Status.Gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateSoak, Partition: "normal", Until: &until}
	h.Status.RejectedRevision = "addon-1"
	item := fleetItem(&fleetview.Snapshot{HostedClusterPackage: h})
	g.Expect(item.ApproveCommands).To(Equal(map[string]string{"normal": "convoy approve addon --partition normal"}))

	raw, err := json.Marshal(item)
	g.Expect(err).NotTo(HaveOccurred())
	var page map[string]any
	g.Expect(json.Unmarshal(raw, &page)).To(Succeed())
	g.Expect(page).To(HaveKeyWithValue("gate", HaveKeyWithValue("until", "2026-01-02T12:03:00Z")))
	g.Expect(page).To(HaveKeyWithValue("rejectedRevision", HaveKeyWithValue("name", "addon-1")))
	g.Expect(page["partitions"]).To(ContainElement(HaveKeyWithValue("until", "2026-01-02T12:03:00Z")))
}

func TestFleetItemNamesTheCommandOfAnApprovalGate(t *testing.T) {
	g := NewWithT(t)
	h := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon"}}
	h.Status.Gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateApproval, Partition: "late"}
	g.Expect(fleetItem(&fleetview.Snapshot{HostedClusterPackage: h}).ApproveCommands).To(HaveKeyWithValue("late", "convoy approve addon --partition late"))
	h.Status.Gate = nil
	g.Expect(fleetItem(&fleetview.Snapshot{HostedClusterPackage: h}).ApproveCommands).To(BeNil())
}

func TestRolloutViewShowsEachPartitionsChecks(t *testing.T) {
	g := NewWithT(t)
	seed(t, fixtureRollout{name: "checked", prefix: "checked", n: 9, checks: true})
	v := rolloutOf(g, "name=checked")
	g.Expect(v.Grid).To(HaveLen(3))
	early := v.Grid[0]
	g.Expect(early.Partition).To(Equal("early"))
	g.Expect(early.State).To(Equal(convoyv1alpha1.PartitionChecking), "early's check runs for an hour")
	g.Expect(early.Until).NotTo(BeNil())
	g.Expect(early.Checks).To(ConsistOf(And(HaveField("Name", "error-rate"), HaveField("State", convoyv1alpha1.CheckRunning),
		HaveField("Passes", int32(3)), HaveField("LastValue", "[0.002]"))))
	g.Expect(v.Grid[2].Checks).To(BeEmpty(), "late has not started")

	page := get(g, "/static/app.js")
	g.Expect(page).To(ContainSubstring("checksList(row.checks)"), "the rollout view draws the checks of each row")
}

func TestFleetItemShowsWhatTheUpstreamSectorsDid(t *testing.T) {
	g := NewWithT(t)
	h := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon"}}
	h.Status.Promotion = &convoyv1alpha1.PromotionStatus{Commit: "1f0e3c9a6b2d4e5f708192a3b4c5d6e7f8091a2b",
		HeadCommit: "8a9b7c6d5e4f30211f0e3c9a6b2d4e5f708192a3", Upstream: []convoyv1alpha1.UpstreamSectorStatus{{Sector: "canary",
			ManagementClusters: []convoyv1alpha1.ManagementClusterStatus{{Name: "mc-canary-1", State: "Completed"},
				{Name: "mc-canary-2", State: "Progressing", Progress: "2/3 partitions, 31/44 clusters"}}}}}
	raw, err := json.Marshal(fleetItem(&fleetview.Snapshot{HostedClusterPackage: h}))
	g.Expect(err).NotTo(HaveOccurred())
	var page map[string]any
	g.Expect(json.Unmarshal(raw, &page)).To(Succeed())
	g.Expect(page).To(HaveKeyWithValue("promotion", And(HaveKeyWithValue("commit", h.Status.Promotion.Commit),
		HaveKeyWithValue("upstream", ContainElement(HaveKeyWithValue("managementClusters",
			ContainElement(HaveKeyWithValue("progress", "2/3 partitions, 31/44 clusters"))))))))

	page2 := get(g, "/static/app.js")
	g.Expect(page2).To(ContainSubstring("promotionCard(it)"), "the fleet page draws each rollout's promotion")
}
