package fleetview

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// forecastApprovalName names the approvals a forecast assumes given, for the planner's input.
const forecastApprovalName = "forecast"

// PartitionForecast is when one partition could start the forecast revision, what holds it
// before (a soak, an approval, a window, the previous partition's checks), and its checks.
type PartitionForecast struct {
	// Name of the partition.
	Name string `json:"name"`
	// Start is the time of the forecast's first change of the partition at the revision, at the
	// earliest: every Package progresses at once and every approval is given as soon as it is
	// asked for. Nil when the forecast never starts it.
	Start *metav1.Time `json:"start,omitempty"`
	// Waits are the gates that held the partition, in the order the forecast met them.
	Waits []Wait `json:"waits,omitempty"`
	// Checks are the partition's checks, in spec order, with when each passes at the earliest.
	Checks []CheckForecast `json:"checks,omitempty"`
}

// Wait is one gate a partition met in the forecast.
type Wait struct {
	// Type is Soak, Approval, Window or Check (the previous partition's checks).
	Type string `json:"type"`
	// Until is when the wait ends by itself (a soak's end, the end of the previous partition's
	// longest check, a window's opening); nil for an approval, which only a person gives.
	Until *metav1.Time `json:"until,omitempty"`
	// Command is what a person types to give the approval an Approval wait needs.
	Command string `json:"command,omitempty"`
}

// gateLog collects, pass after pass, when each partition starts and what it waits for.
type gateLog struct {
	hcpkg      *convoyv1alpha1.HostedClusterPackage
	name       string
	update     rollout.Revision
	order      []string
	starts     map[string]time.Time
	waits      map[string][]Wait
	passes     map[string]map[string]time.Time
	anyWaiting bool
}

// newGateLog starts a log of h rolling out update.
func newGateLog(h *convoyv1alpha1.HostedClusterPackage, update rollout.Revision) *gateLog {
	return &gateLog{hcpkg: h, name: h.Name, update: update, starts: map[string]time.Time{}, waits: map[string][]Wait{},
		passes: map[string]map[string]time.Time{}}
}

// notePlan records the partitions of plan in rollout order, the gate it reports, and the
// partitions its changes start at the forecast revision as of now.
func (l *gateLog) notePlan(plan *rollout.Plan, now time.Time) {
	for _, p := range plan.Partitions {
		if !slices.Contains(l.order, p.Name) {
			l.order = append(l.order, p.Name)
		}
	}
	if plan.Gate != nil && !holdsCompletion(plan) {
		l.noteWait(plan.Gate)
	}
	for _, changes := range [][]rollout.Change{plan.Creates, plan.Updates} {
		for _, c := range changes {
			if _, ok := l.starts[c.Partition]; !ok && l.isUpdate(c.Revision) {
				l.starts[c.Partition] = now
			}
		}
	}
}

// holdsCompletion reports whether the gate of plan is the Check gate of a partition whose own
// checks run: it holds the rollout's completion, not a partition's start, and the partition's
// Checks say until when.
func holdsCompletion(plan *rollout.Plan) bool {
	if plan.Gate.Type != convoyv1alpha1.GateCheck {
		return false
	}
	for _, p := range plan.Partitions {
		if p.Name == plan.Gate.Partition {
			return p.State == convoyv1alpha1.PartitionChecking
		}
	}
	return false
}

// isUpdate reports whether rev is the forecast revision.
func (l *gateLog) isUpdate(rev rollout.Revision) bool {
	return rev.Name == l.update.Name && rev.Commit == l.update.Commit
}

// noteWait records gate as a wait of its partition; a gate of a type already recorded for the
// partition only moves that wait's end.
func (l *gateLog) noteWait(gate *convoyv1alpha1.RolloutGate) {
	if gate.Type == convoyv1alpha1.GateFailures || gate.Partition == "" {
		return
	}
	l.anyWaiting = true
	waits := l.waits[gate.Partition]
	for i := range waits {
		if waits[i].Type == gate.Type {
			waits[i].Until = gate.Until.DeepCopy()
			return
		}
	}
	w := Wait{Type: gate.Type, Until: gate.Until.DeepCopy()}
	if gate.Type == convoyv1alpha1.GateApproval {
		w.Command = ApproveCommand(l.name, gate.Partition)
	}
	l.waits[gate.Partition] = append(waits, w)
}

// noteRequiredApprovals records an Approval wait for each partition whose policy requires an
// approval that approvals (the simulated ones aside) does not give for the revision, whether
// or not the forecast reached it: a person has to act before it starts. Run after the
// simulation, it adds only the waits the planner's gates did not report, after the others.
func (l *gateLog) noteRequiredApprovals(h *convoyv1alpha1.HostedClusterPackage, approvals []rollout.Approval) {
	if h.Spec.Partition == nil {
		return
	}
	for _, p := range h.Spec.Partition.Policies {
		approved := slices.ContainsFunc(approvals, func(a rollout.Approval) bool {
			return a.Name != forecastApprovalName && a.Approves(h, p.Name, &l.update)
		})
		if p.RequireApproval && !approved {
			l.noteWait(&convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateApproval, Partition: p.Name})
		}
	}
}

// partitions returns the forecast of each partition in rollout order; nil when no partition
// waited and none has checks, so that a rollout without gates is forecast as before.
func (l *gateLog) partitions() []PartitionForecast {
	if !l.anyWaiting && !l.hasChecks() {
		return nil
	}
	out := make([]PartitionForecast, 0, len(l.order))
	for _, name := range l.order {
		p := PartitionForecast{Name: name, Waits: l.waits[name], Checks: l.checks(name)}
		if t, ok := l.starts[name]; ok {
			start := metav1.NewTime(t)
			p.Start = &start
		}
		out = append(out, p)
	}
	return out
}

// passGate moves the simulation past the gate of plan, which changes nothing: to the end of a
// soak or the opening of a window, or by giving the approval asked for. It reports false when
// the gate does not open by itself or by an approval (failures, a window that never opens).
func (s *simulation) passGate(plan *rollout.Plan) bool {
	g := plan.Gate
	if g == nil {
		return false
	}
	switch {
	case g.Type == convoyv1alpha1.GateApproval:
		h, u := s.in.HostedClusterPackage, s.in.UpdateRevision
		s.in.Approvals = append(s.in.Approvals, rollout.Approval{Name: forecastApprovalName, HostedClusterPackageUID: h.UID,
			Namespace: h.Spec.Template.Spec.SourceRef.Namespace, Partition: g.Partition, Revision: u.Name, Commit: u.Commit,
			CreatedAt: u.CreatedAt})
	case g.Until != nil && (g.Type == convoyv1alpha1.GateSoak || g.Type == convoyv1alpha1.GateWindow):
		s.in.Now = later(s.in.Now.Add(s.tick), g.Until.Time)
	case g.Type == convoyv1alpha1.GateCheck:
		s.in.Now = later(s.in.Now.Add(s.tick), s.in.Now.Add(plan.RequeueAfter))
		if g.Until != nil {
			s.in.Now = later(s.in.Now, g.Until.Time)
		}
	default:
		return false
	}
	return true
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// gateBlockedReason explains a gate the forecast cannot pass; "" when plan has none.
func gateBlockedReason(plan *rollout.Plan) string {
	g := plan.Gate
	switch {
	case g == nil:
		return ""
	case g.Type == convoyv1alpha1.GateWindow:
		return fmt.Sprintf("no allowed window opens for partition %s within a year: %s", g.Partition, g.Message)
	}
	return fmt.Sprintf("%s gate on partition %s: %s", g.Type, g.Partition, g.Message)
}
