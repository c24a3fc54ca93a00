package fleetview

import (
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// timeLayout is how status and plan print an absolute time: in UTC, to the second.
const timeLayout = "2006-01-02 15:04:05 MST"

// ApproveCommand is what a person types to approve partition of the HostedClusterPackage name.
func ApproveCommand(name, partition string) string {
	return "convoy approve " + name + " --partition " + partition
}

// writeGate prints what holds the rollout and the revision a rollback rejected, when there are.
func (r *Report) writeGate(w io.Writer) {
	if r.Gate != nil {
		fmt.Fprintf(w, "  Gate\t%s\n", r.gateText())
	}
	if r.RejectedRevision != nil {
		fmt.Fprintf(w, "  Rejected\t%s: a rollback rejected it; a new commit or template change makes the next revision\n",
			r.RejectedRevision.text(""))
	}
}

// gateText describes the gate in one phrase: its type, the partition it holds, until when, and
// its message: "Soak on partition normal until 2026-01-02 12:03:00 UTC (in 3m): …".
func (r *Report) gateText() string {
	g := r.Gate
	s := g.Type
	if g.Partition != "" {
		s += " on partition " + g.Partition
	}
	if g.Until != nil {
		s += " until " + WhenText(g.Until.Time, r.Now)
	}
	if g.Message != "" {
		s += ": " + g.Message
	}
	if g.Type == convoyv1alpha1.GateApproval && g.Partition != "" && !strings.Contains(g.Message, "convoy approve") {
		s += "; to approve: " + ApproveCommand(r.Name, g.Partition)
	}
	return s
}

// partitionStateText is a partition's state with what it waits for: until when it soaks, runs
// its checks or waits for a window, the command that approves it.
func (r *Report) partitionStateText(p convoyv1alpha1.PartitionStatus) string {
	switch p.State {
	case convoyv1alpha1.PartitionSoaking, convoyv1alpha1.PartitionOutsideWindow, convoyv1alpha1.PartitionChecking:
		return p.State + untilSuffix(p.Until, r.Now)
	case convoyv1alpha1.PartitionAwaitingApproval:
		return p.State + ": " + ApproveCommand(r.Name, p.Name)
	}
	return p.State
}

// untilSuffix is " until <when>", or "" when until is not set.
func untilSuffix(until *metav1.Time, now time.Time) string {
	if until == nil {
		return ""
	}
	return " until " + WhenText(until.Time, now)
}

// WhenText prints t in UTC, followed by how far from now it is ("in 3m") unless now is zero.
func WhenText(t, now time.Time) string {
	s := t.UTC().Format(timeLayout)
	if now.IsZero() {
		return s
	}
	d := t.Sub(now)
	if d <= 0 {
		return s + " (due)"
	}
	return s + " (in " + ShortDuration(d) + ")"
}

// ShortDuration prints d for a human, to the second under a minute, to the minute under a day,
// and in days and hours beyond: "45s", "3m", "1h20m", "2d3h". It rounds up, so that a wait is
// never said to be shorter than it is.
func ShortDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int((d+time.Second-1)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int((d+time.Minute-1)/time.Minute))
	case d < 24*time.Hour:
		m := int((d + time.Minute - 1) / time.Minute)
		if m%60 == 0 {
			return fmt.Sprintf("%dh", m/60)
		}
		return fmt.Sprintf("%dh%dm", m/60, m%60)
	}
	h := int((d + time.Hour - 1) / time.Hour)
	if h%24 == 0 {
		return fmt.Sprintf("%dd", h/24)
	}
	return fmt.Sprintf("%dd%dh", h/24, h%24)
}

// gateLine is the gate in the one-line form of a report, with the command that gives an
// approval it waits for, and the rejected revision; empty when there is neither.
func (r *Report) gateLine() string {
	var parts []string
	if g := r.Gate; g != nil {
		s := "gate " + g.Type
		if g.Partition != "" {
			s += " on " + g.Partition
		}
		if g.Until != nil {
			s += " until " + g.Until.UTC().Format(timeLayout)
		}
		if g.Type == convoyv1alpha1.GateApproval && g.Partition != "" {
			s += " (" + ApproveCommand(r.Name, g.Partition) + ")"
		}
		parts = append(parts, s)
	}
	if r.RejectedRevision != nil {
		parts = append(parts, "rejected "+r.RejectedRevision.Name)
	}
	return strings.Join(parts, ", ")
}
