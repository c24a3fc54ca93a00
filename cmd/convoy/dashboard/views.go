package dashboard

import (
	"cmp"
	"context"
	"slices"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

// FleetView is the fleet page: one summary per HostedClusterPackage.
type FleetView struct {
	// Items are the HostedClusterPackages by name.
	Items []FleetItem `json:"items"`
}

// FleetItem summarises one HostedClusterPackage.
type FleetItem struct {
	fleetview.Report
	// Stalled is true when the Stalled condition is True or a Package failed.
	Stalled bool `json:"stalled"`
	// StalledMessage is the message of the Stalled condition, when there is one.
	StalledMessage string `json:"stalledMessage,omitempty"`
	// Conditions are the HostedClusterPackage's conditions with their tones: in JSON they take
	// the place of Report.Conditions, which have none.
	Conditions []Condition `json:"conditions,omitempty"`
	// ApproveCommands are, by partition, the commands that approve the partitions awaiting an
	// approval.
	ApproveCommands map[string]string `json:"approveCommands,omitempty"`
	// Promotion is what the upstream sectors let through and did with the GitSource's newest
	// commit, under spec.promotion; nil without.
	Promotion *convoyv1alpha1.PromotionStatus `json:"promotion,omitempty"`
}

// Condition is a status condition as the page shows it.
type Condition struct {
	Type    string    `json:"type"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since"`
	// Tone is what the condition means for its object: the colour of its pill.
	Tone Tone `json:"tone"`
}

// BuildFleet reads every HostedClusterPackage from r and summarises it.
func BuildFleet(ctx context.Context, r client.Reader) (*FleetView, error) {
	snaps, err := fleetview.ReadStatus(ctx, r, "")
	if err != nil {
		return nil, err
	}
	v := &FleetView{Items: make([]FleetItem, 0, len(snaps))}
	for _, s := range snaps {
		v.Items = append(v.Items, fleetItem(s))
	}
	slices.SortFunc(v.Items, func(a, b FleetItem) int { return cmp.Compare(a.Name, b.Name) })
	return v, nil
}

// fleetItem summarises the HostedClusterPackage of snap.
func fleetItem(snap *fleetview.Snapshot) FleetItem {
	conds := snap.HostedClusterPackage.Status.Conditions
	item := FleetItem{Report: fleetview.NewReport(snap), Conditions: conditionsOf(conds),
		Promotion: snap.HostedClusterPackage.Status.Promotion}
	stalled := apimeta.FindStatusCondition(conds, convoyv1alpha1.StalledCondition)
	if stalled != nil && stalled.Status == metav1.ConditionTrue {
		item.Stalled, item.StalledMessage = true, stalled.Message
	}
	item.Stalled = item.Stalled || item.Packages.Failed > 0
	item.ApproveCommands = approveCommands(item.Report)
	return item
}

// approveCommands returns the command that approves each partition awaiting an approval, by the
// partitions' states or the gate; nil when none awaits one.
func approveCommands(r fleetview.Report) map[string]string {
	var out map[string]string
	add := func(partition string) {
		if out == nil {
			out = map[string]string{}
		}
		out[partition] = fleetview.ApproveCommand(r.Name, partition)
	}
	for _, p := range r.Partitions {
		if p.State == convoyv1alpha1.PartitionAwaitingApproval {
			add(p.Name)
		}
	}
	if g := r.Gate; g != nil && g.Type == convoyv1alpha1.GateApproval && g.Partition != "" {
		add(g.Partition)
	}
	return out
}

// conditionsOf copies conditions for the page, each with its tone.
func conditionsOf(conds []metav1.Condition) []Condition {
	out := make([]Condition, 0, len(conds))
	for _, c := range conds {
		out = append(out, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			Since: c.LastTransitionTime.Time, Tone: conditionTone(c, conds)})
	}
	return out
}
