package fleetview

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// barWidth is the number of cells of a partition's progress bar.
const barWidth = 20

// Report is the rollout of one HostedClusterPackage as its status tells it; it is what
// `convoy status -o json|yaml` prints.
type Report struct {
	// Name of the HostedClusterPackage.
	Name string `json:"name"`
	// Paused mirrors spec.paused.
	Paused bool `json:"paused,omitempty"`
	// Strategy is "instant" or "rollingUpgrade maxUnavailable=<n>".
	Strategy string `json:"strategy"`
	// CurrentRevision is the revision of the last completed rollout; nil before the first one.
	CurrentRevision *RevisionRef `json:"currentRevision,omitempty"`
	// UpdateRevision is the revision being rolled out; nil before the controller stored one.
	UpdateRevision *RevisionRef `json:"updateRevision,omitempty"`
	// Packages are the counts of the status.
	Packages Counts `json:"packages"`
	// Partitions in rollout order, each with its state, for a soak, checks or a window until
	// when, and the results of its checks at the update revision.
	Partitions []convoyv1alpha1.PartitionStatus `json:"partitions,omitempty"`
	// Gate is what holds the rollout now (status.gate); nil when nothing does.
	Gate *convoyv1alpha1.RolloutGate `json:"gate,omitempty"`
	// RejectedRevision is the update revision a rollback rejected; nil when none is.
	RejectedRevision *RevisionRef `json:"rejectedRevision,omitempty"`
	// Conditions of the status, without timestamps.
	Conditions []Condition `json:"conditions,omitempty"`
	// Failures sampled by the status.
	Failures []convoyv1alpha1.PackageFailure `json:"failures,omitempty"`
	// Skipped samples the targets the rollout leaves alone for now, with why.
	Skipped []convoyv1alpha1.SkippedTarget `json:"skipped,omitempty"`
	// DependsOn names the HostedClusterPackages it waits for on each HostedCluster
	// (status.dependencies).
	DependsOn []string `json:"dependsOn,omitempty"`
	// Waiting samples the Packages that wait for a dependency, or for their dependants to be
	// gone, with what they wait for.
	Waiting []convoyv1alpha1.DependencyWait `json:"waiting,omitempty"`
	// Stale is true while the controller has not observed the current generation of the spec.
	Stale bool `json:"stale,omitempty"`
	// Now is the clock WriteText measures waits against ("in 3m"); the zero time prints
	// absolute times only.
	Now time.Time `json:"-"`
}

// RevisionRef names a revision and the Git commit it pins.
type RevisionRef struct {
	// Name of the ControllerRevision.
	Name string `json:"name"`
	// Commit is the Git commit; empty when the ControllerRevision could not be read.
	Commit string `json:"commit,omitempty"`
}

// Counts are the package counts of a HostedClusterPackage status.
type Counts struct {
	Total       int32 `json:"total"`
	Updated     int32 `json:"updated"`
	Available   int32 `json:"available"`
	Unavailable int32 `json:"unavailable"`
	Progressed  int32 `json:"progressed"`
	Paused      int32 `json:"paused"`
	Failed      int32 `json:"failed"`
	// Skipped targets are left alone for now (status.skipped says why).
	Skipped int32 `json:"skipped,omitempty"`
	// PendingDeletions are Packages of deselected HostedClusters waiting to be deleted.
	PendingDeletions int32 `json:"pendingDeletions,omitempty"`
	// Waiting targets' Packages wait for a dependency (status.waiting says which).
	Waiting int32 `json:"waiting,omitempty"`
}

// Condition is a status condition without its timestamps.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// NewReport summarises the status of snap's HostedClusterPackage.
func NewReport(snap *Snapshot) Report {
	h := snap.HostedClusterPackage
	st := h.Status
	r := Report{
		Name:            h.Name,
		Paused:          h.Spec.Paused,
		Strategy:        strategyText(h.Spec.Strategy),
		CurrentRevision: snap.revisionRef(st.CurrentRevision),
		UpdateRevision:  snap.revisionRef(st.UpdateRevision),
		Packages: Counts{Total: st.TotalPackages, Updated: st.UpdatedPackages, Available: st.AvailablePackages,
			Unavailable: st.UnavailablePackages, Progressed: st.ProgressedPackages, Paused: st.PausedPackages,
			Failed: st.FailedPackages, Skipped: st.SkippedPackages, PendingDeletions: st.PendingDeletions,
			Waiting: st.WaitingPackages},
		Partitions:       st.Partitions,
		Gate:             st.Gate,
		RejectedRevision: snap.revisionRef(st.RejectedRevision),
		Failures:         st.Failures,
		Skipped:          st.Skipped,
		DependsOn:        st.Dependencies,
		Waiting:          st.Waiting,
		Stale:            st.ObservedGeneration != h.Generation,
	}
	for _, c := range st.Conditions {
		r.Conditions = append(r.Conditions, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return r
}

// revisionRef names the revision called name, with its commit when it was decoded.
func (s *Snapshot) revisionRef(name string) *RevisionRef {
	if name == "" {
		return nil
	}
	return &RevisionRef{Name: name, Commit: s.Revisions[name].Commit}
}

// strategyText describes a strategy in one phrase.
func strategyText(s convoyv1alpha1.HostedClusterPackageStrategy) string {
	if s.Instant != nil {
		return "instant"
	}
	if s.RollingUpgrade != nil && s.RollingUpgrade.MaxUnavailable != nil {
		return "rollingUpgrade maxUnavailable=" + s.RollingUpgrade.MaxUnavailable.String()
	}
	return "rollingUpgrade maxUnavailable=1"
}

// WriteText prints the report for a human.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "HostedClusterPackage %s (%s%s)\n", r.Name, r.Strategy, pausedText(r.Paused, r.Stale))
	fmt.Fprintf(tw, "  Revision\t%s\n", r.revisionsText())
	r.writeGate(tw)
	if len(r.DependsOn) > 0 {
		fmt.Fprintf(tw, "  Depends on\t%s\n", strings.Join(r.DependsOn, ", "))
	}
	c := r.Packages
	fmt.Fprintf(tw, "  Packages\t%d total, %d updated, %d available, %d progressed, %d failed, %d paused%s\n",
		c.Total, c.Updated, c.Available, c.Progressed, c.Failed, c.Paused, c.extraText())
	r.writePartitions(tw)
	r.writeChecks(tw)
	r.writeConditions(tw)
	r.writeFailures(tw)
	r.writeSkipped(tw)
	r.writeWaiting(tw)
	return tw.Flush()
}

// pausedText adds notes on a paused or not yet observed spec.
func pausedText(paused, stale bool) string {
	var s string
	if paused {
		s += ", paused"
	}
	if stale {
		s += ", spec not yet observed by the controller"
	}
	return s
}

// revisionsText prints "current → update", or the one revision when they are the same.
func (r *Report) revisionsText() string {
	if r.CurrentRevision != nil && r.UpdateRevision != nil && r.CurrentRevision.Name == r.UpdateRevision.Name {
		return r.UpdateRevision.text("") + ", rolled out"
	}
	return r.CurrentRevision.text("none") + " → " + r.UpdateRevision.text("not stored yet")
}

// text prints a revision as "name (commit)", or none when r is nil.
func (r *RevisionRef) text(none string) string {
	switch {
	case r == nil:
		return none
	case r.Commit == "":
		return r.Name
	case r.Name == "":
		return shortCommit(r.Commit) + " (not stored as a revision yet)"
	}
	return fmt.Sprintf("%s (%s)", r.Name, shortCommit(r.Commit))
}

// writePartitions prints a progress bar per partition.
func (r *Report) writePartitions(w io.Writer) {
	if len(r.Partitions) == 0 {
		return
	}
	fmt.Fprintln(w, "  Partitions")
	for _, p := range r.Partitions {
		fmt.Fprintf(w, "    %s\t%s\t%d/%d progressed, %d updated, %d available\t%s\n",
			p.Name, Bar(p.Progressed, p.Total), p.Progressed, p.Total, p.Updated, p.Available, r.partitionStateText(p))
	}
}

// Bar draws done out of total as a bar of barWidth cells.
func Bar(done, total int32) string {
	filled := barWidth
	if total > 0 {
		filled = int(done) * barWidth / int(total)
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", barWidth-filled) + "]"
}

// writeConditions prints the conditions, one a line.
func (r *Report) writeConditions(w io.Writer) {
	if len(r.Conditions) == 0 {
		return
	}
	fmt.Fprintln(w, "  Conditions")
	for _, c := range r.Conditions {
		fmt.Fprintf(w, "    %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
	}
}

// writeFailures prints the sampled failures with their reasons.
func (r *Report) writeFailures(w io.Writer) {
	rows := make([]sampledTarget, len(r.Failures))
	for i, f := range r.Failures {
		rows[i] = sampledTarget{f.HostedCluster, f.Reason, f.Message}
	}
	writeSampled(w, "Failures", r.Packages.Failed, rows)
}

// extraText adds the skipped targets and pending deletions to the counts, when there are any.
func (c Counts) extraText() string {
	var s string
	if c.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", c.Skipped)
	}
	if c.PendingDeletions > 0 {
		s += fmt.Sprintf(", %d deletions pending", c.PendingDeletions)
	}
	if c.Waiting > 0 {
		s += fmt.Sprintf(", %d waiting for dependencies", c.Waiting)
	}
	return s
}

// writeSkipped prints the sampled skipped targets with their reasons.
func (r *Report) writeSkipped(w io.Writer) {
	rows := make([]sampledTarget, len(r.Skipped))
	for i, t := range r.Skipped {
		rows[i] = sampledTarget{t.HostedCluster, t.Reason, t.Message}
	}
	writeSampled(w, "Skipped", r.Packages.Skipped, rows)
}

// writeWaiting prints the sampled Packages that wait, with what they wait for.
func (r *Report) writeWaiting(w io.Writer) {
	rows := make([]sampledTarget, len(r.Waiting))
	for i, t := range r.Waiting {
		rows[i] = sampledTarget{t.HostedCluster, t.Reason, t.Message}
	}
	writeSampled(w, "Waiting", max(r.Packages.Waiting, int32(len(rows))), rows)
}

// sampledTarget is one HostedCluster of a sample that status keeps: failed or skipped.
type sampledTarget struct{ hostedCluster, reason, message string }

// writeSampled prints a titled sample of total targets; nothing when the sample is empty.
func writeSampled(w io.Writer, title string, total int32, rows []sampledTarget) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s (%d)\n", title, total)
	for _, t := range rows {
		fmt.Fprintf(w, "    %s\t%s\t%s\n", t.hostedCluster, t.reason, t.message)
	}
}

// Line is the report in one line, for logs and plain --watch output.
func (r *Report) Line() string {
	var parts []string
	for _, p := range r.Partitions {
		parts = append(parts, fmt.Sprintf("%s=%s %d/%d", p.Name, p.State, p.Progressed, p.Total))
	}
	c := r.Packages
	line := fmt.Sprintf("%s: %s: %d/%d progressed, %d available, %d failed",
		r.Name, r.revisionsText(), c.Progressed, c.Total, c.Available, c.Failed)
	if len(parts) > 0 {
		line += "; " + strings.Join(parts, ", ")
	}
	if gate := r.gateLine(); gate != "" {
		line += "; " + gate
	}
	return line
}
