package fleetview

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// WriteText prints the forecast for a human: a header, one line per Package in rollout order
// with its batch, when each partition can start, what it waits for and when its checks pass
// (when a gate holds one or a partition has checks),
// then the ineligible targets and why the rollout would stop, if it would.
func (f *Forecast) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Plan for HostedClusterPackage %s\n", f.Name)
	fmt.Fprintf(tw, "  Revision\t%s, from %s\n", f.Revision.text(""), f.From.text("none (first rollout)"))
	fmt.Fprintf(tw, "  Strategy\t%s\n", f.Strategy)
	fmt.Fprintf(tw, "  Already updated\t%d\n", f.AlreadyUpdated)
	if err := tw.Flush(); err != nil {
		return err
	}
	f.writePromotionText(w)
	if err := f.writeBatches(w); err != nil {
		return err
	}
	if err := f.writePartitionStarts(w); err != nil {
		return err
	}
	if err := f.writeIneligible(w); err != nil {
		return err
	}
	f.writeDependencies(w)
	switch {
	case f.Blocked != "":
		fmt.Fprintf(w, "\nThe rollout would stop: %s\n", f.Blocked)
	case len(f.Batches) == 0:
		fmt.Fprintln(w, "\nNothing to do: every eligible HostedCluster is on the revision.")
	default:
		fmt.Fprintf(w, "\n%d batches; every eligible HostedCluster ends on the revision.\n", len(f.Batches))
	}
	return nil
}

// writeBatches prints one line per Package change.
func (f *Forecast) writeBatches(w io.Writer) error {
	if len(f.Batches) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BATCH\tPARTITION\tHOSTEDCLUSTER\tACTION\tREVISION\tREASON")
	for i, b := range f.Batches {
		for _, s := range b.Steps {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", i+1, s.Partition, s.HostedCluster, s.Action, s.Revision, s.Reason)
		}
	}
	return tw.Flush()
}

// writeIneligible prints the skipped targets and why.
func (f *Forecast) writeIneligible(w io.Writer) error {
	if len(f.Ineligible) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nIneligible (kept as they are until they become eligible):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range f.Ineligible {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", t.HostedCluster, t.Partition, t.Reason, t.Message)
	}
	return tw.Flush()
}

// partitionStartsTitle heads the partitions' starts: what "at the earliest" assumes.
const partitionStartsTitle = "Partitions, at the earliest (every Package progresses at once, every approval is given when asked for):"

// partitionStartsWithChecksTitle heads the partitions' starts when a partition has checks.
const partitionStartsWithChecksTitle = "Partitions, at the earliest (every Package progresses at once, every approval is given when asked for, " +
	"every check passes once its duration is over):"

// startsTitle is the title of the partitions' starts of f.
func (f *Forecast) startsTitle() string {
	if f.anyChecks() {
		return partitionStartsWithChecksTitle
	}
	return partitionStartsTitle
}

// writePartitionStarts prints when each partition can start and what holds it before.
func (f *Forecast) writePartitionStarts(w io.Writer) error {
	if len(f.Partitions) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s\n", f.startsTitle())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	checks := f.anyChecks()
	header := "  PARTITION\tCAN START\tWAITS FOR"
	if checks {
		header += "\tCHECKS"
	}
	fmt.Fprintln(tw, header)
	for _, p := range f.Partitions {
		line := fmt.Sprintf("  %s\t%s\t%s", p.Name, f.startText(p), waitsText(p.Waits))
		if checks {
			line += "\t" + checksText(p.Checks)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// anyChecks reports whether a partition of the forecast has checks.
func (f *Forecast) anyChecks() bool {
	for _, p := range f.Partitions {
		if len(p.Checks) > 0 {
			return true
		}
	}
	return false
}

// startText says when p can start: "now", a time with how far it is, or that it does not.
func (f *Forecast) startText(p PartitionForecast) string {
	switch {
	case p.Start == nil:
		return "not in this forecast"
	case !p.Start.After(f.now):
		return "now"
	}
	return WhenText(p.Start.Time, f.now)
}

// waitsText lists waits in one phrase: "soak until …; checks of the previous partition until …;
// awaits approval: convoy approve …".
func waitsText(waits []Wait) string {
	parts := make([]string, 0, len(waits))
	for _, w := range waits {
		parts = append(parts, w.text())
	}
	return strings.Join(parts, "; ")
}

// text describes one wait.
func (w Wait) text() string {
	var s string
	switch w.Type {
	case convoyv1alpha1.GateSoak:
		s = "soak"
	case convoyv1alpha1.GateWindow:
		s = "outside its windows"
	case convoyv1alpha1.GateApproval:
		return "awaits approval: " + w.Command
	case convoyv1alpha1.GateCheck:
		s = "checks of the previous partition"
	default:
		s = w.Type
	}
	if w.Until != nil {
		s += " until " + w.Until.UTC().Format(timeLayout)
	}
	return s
}

// writeDependencies prints the order of the HostedClusterPackages on each HostedCluster, level
// by level, and the Packages that wait for a dependency in the first pass.
func (f *Forecast) writeDependencies(w io.Writer) {
	if len(f.Order) > 0 {
		fmt.Fprintln(w, "\nOrder on each HostedCluster (a level installs or moves once the levels before it are available):")
		for i, level := range f.Order {
			fmt.Fprintf(w, "  %d. %s\n", i+1, strings.Join(level, ", "))
		}
	}
	if len(f.Waiting) > 0 {
		fmt.Fprintln(w, "\nWaiting (held until what they wait for is available; the forecast holds dependencies as they are now):")
		for _, wt := range f.Waiting {
			fmt.Fprintf(w, "  %s\t%s\n", wt.Reason, wt.Message)
		}
	}
}
