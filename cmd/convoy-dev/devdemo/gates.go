package devdemo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

// The gates the demo adds to the example HostedClusterPackage: a soak after every partition but
// the last, short enough to keep the demo quick, and an approval before the last partition.
const (
	devSoakSeconds       = 5
	devApprovalPartition = "late"
)

// addDemoGates sets the demo's soak and approval on the HostedClusterPackage hcpkg, as an
// operator would write them in spec.strategy.rollingUpgrade.soakSeconds and
// spec.partition.policies.
func addDemoGates(hcpkg *unstructured.Unstructured) error {
	if err := unstructured.SetNestedField(hcpkg.Object, int64(devSoakSeconds),
		"spec", "strategy", "rollingUpgrade", "soakSeconds"); err != nil {
		return err
	}
	policies := []any{map[string]any{"name": devApprovalPartition, "requireApproval": true}}
	return unstructured.SetNestedSlice(hcpkg.Object, policies, "spec", "partition", "policies")
}

// gateNotes remembers which gates of which revision the demo explained already, so that each is
// explained once, when the rollout first waits for it.
type gateNotes struct {
	explained map[string]bool
	// approvalWaits counts the revisions the demo saw waiting for an approval.
	approvalWaits int
}

// noteGate explains the gate that holds the rollout of snap the first time the demo sees it: a
// soak says which partition soaks and until when; an approval says what to type and, under
// exitAfterRollout, gives the approval itself by running that command.
func (d *demo) noteGate(ctx context.Context, snap *fleetview.Snapshot) error {
	st := snap.HostedClusterPackage.Status
	gate := st.Gate
	if gate == nil {
		return nil
	}
	key := st.UpdateRevision + "/" + gate.Type + "/" + gate.Partition
	if d.gates.explained[key] {
		return nil
	}
	if d.gates.explained == nil {
		d.gates.explained = map[string]bool{}
	}
	d.gates.explained[key] = true
	switch gate.Type {
	case convoyv1alpha1.GateSoak:
		d.printNote("%s", soakNote(st))
	case convoyv1alpha1.GateApproval:
		return d.awaitApproval(ctx, snap, gate.Partition)
	}
	return nil
}

// soakNote says which partition soaks, until when, and which one starts after it.
func soakNote(st convoyv1alpha1.HostedClusterPackageStatus) string {
	soaking := "the partition before it"
	for _, p := range st.Partitions {
		if p.State == convoyv1alpha1.PartitionSoaking {
			soaking = "partition " + p.Name
		}
	}
	until := ""
	if st.Gate.Until != nil {
		until = ", until " + st.Gate.Until.UTC().Format("15:04:05 MST")
	}
	return fmt.Sprintf("Soak: %s is done; it soaks for %ds%s, before partition %s starts.",
		soaking, devSoakSeconds, until, st.Gate.Partition)
}

// awaitApproval prints the command that approves partition at the update revision of snap and,
// under exitAfterRollout, runs it; otherwise the rollout goes on once a person has typed it.
func (d *demo) awaitApproval(ctx context.Context, snap *fleetview.Snapshot, partition string) error {
	st := snap.HostedClusterPackage.Status
	commit := snap.Revisions[st.UpdateRevision].Commit
	d.printNote("Approval: partition %s waits for an approval of revision %s (commit %s).",
		partition, st.UpdateRevision, shortCommit(commit))
	if d.gates.approvalWaits > 0 {
		fmt.Fprintln(d.out, noteIndent+"An approval names its revision: the one of the previous commit does not count.")
	}
	d.gates.approvalWaits++
	fmt.Fprintf(d.out, "%sTo approve it, type in another terminal (the rollout goes on once you have):\n\n%s  %s\n\n",
		noteIndent, noteIndent, approveCommandLine(d.hcpkg, partition, d.opts.Kubeconfig))
	if !d.opts.ExitAfterRollout {
		return nil
	}
	fmt.Fprintln(d.out, noteIndent+"--exit-after-rollout: the demo runs that command itself:")
	var out bytes.Buffer
	err := d.opts.Approve(ctx, d.opts.Kubeconfig, d.hcpkg, partition, &out)
	writeIndented(d.out, out.String())
	return err
}

// approveCommandLine is the `convoy approve` command a person types, with the demo's kubeconfig.
func approveCommandLine(hcpkg, partition, kubeconfig string) string {
	return fleetview.ApproveCommand(hcpkg, partition) + " --kubeconfig " + shellQuote(kubeconfig)
}

// shellQuote quotes s for a POSIX shell when it holds more than letters, digits and /._-.
func shellQuote(s string) string {
	plain := func(r rune) bool {
		return !strings.ContainsRune("/._-", r) && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9')
	}
	if s != "" && strings.IndexFunc(s, plain) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// noteIndent aligns the lines that continue a note of the timeline with its text.
const noteIndent = "           "

// printNote prints one line of the demo's timeline, after the seconds since it started.
func (d *demo) printNote(format string, args ...any) {
	fmt.Fprintf(d.out, "  %6.1fs  %s\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, args...))
}

// writeIndented writes the lines of text under the command of a note.
func writeIndented(w io.Writer, text string) {
	for line := range strings.Lines(strings.TrimRight(text, "\n")) {
		fmt.Fprintf(w, "%s  %s", noteIndent, line)
	}
	fmt.Fprintln(w)
}
