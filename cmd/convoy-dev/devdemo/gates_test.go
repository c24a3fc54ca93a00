package devdemo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

func TestAddDemoGatesSoaksAndRequiresAnApprovalBeforeLate(t *testing.T) {
	g := NewWithT(t)
	hcpkg := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"strategy":  map[string]any{"rollingUpgrade": map[string]any{"maxUnavailable": int64(1)}},
		"partition": map[string]any{"labelKey": PartitionLabel},
	}}}
	g.Expect(addDemoGates(hcpkg)).To(Succeed())
	soak, _, _ := unstructured.NestedInt64(hcpkg.Object, "spec", "strategy", "rollingUpgrade", "soakSeconds")
	g.Expect(soak).To(Equal(int64(devSoakSeconds)))
	policies, _, _ := unstructured.NestedSlice(hcpkg.Object, "spec", "partition", "policies")
	g.Expect(policies).To(Equal([]any{map[string]any{"name": "late", "requireApproval": true}}))
	maxUnavailable, _, _ := unstructured.NestedInt64(hcpkg.Object, "spec", "strategy", "rollingUpgrade", "maxUnavailable")
	g.Expect(maxUnavailable).To(Equal(int64(1)), "the example's other fields stay")
}

// approvals records the partitions a demo approved.
type approvals struct{ partitions []string }

func (a *approvals) approve(_ context.Context, kubeconfig, hcpkg, partition string, out io.Writer) error {
	a.partitions = append(a.partitions, partition)
	_, err := fmt.Fprintf(out, "approved partition %s of %s (%s)\n", partition, hcpkg, kubeconfig)
	return err
}

// gatedDemo is a demo of the HostedClusterPackage extra-component that writes to out.
func gatedDemo(out io.Writer, exitAfterRollout bool, a *approvals) *demo {
	return &demo{out: out, hcpkg: "extra-component", start: time.Now(),
		opts: Options{Kubeconfig: "/tmp/convoy-dev/kubeconfig", ExitAfterRollout: exitAfterRollout, Approve: a.approve}}
}

// gatedSnapshot is a status at revision whose rollout the gate holds.
func gatedSnapshot(revision string, gate convoyv1alpha1.RolloutGate, partitions ...convoyv1alpha1.PartitionStatus) *fleetview.Snapshot {
	return &fleetview.Snapshot{
		HostedClusterPackage: &convoyv1alpha1.HostedClusterPackage{Status: convoyv1alpha1.HostedClusterPackageStatus{
			UpdateRevision: revision, Gate: &gate, Partitions: partitions}},
		Revisions: map[string]rollout.Revision{revision: {Name: revision, Commit: "0123456789abcdef0123"}},
	}
}

func TestNoteGateExplainsASoakOnce(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	d := gatedDemo(&out, false, &approvals{})
	until := metav1.NewTime(time.Date(2026, 1, 2, 12, 3, 4, 0, time.UTC))
	snap := gatedSnapshot("extra-component-1", convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateSoak, Partition: "normal", Until: &until},
		convoyv1alpha1.PartitionStatus{Name: "early", State: convoyv1alpha1.PartitionSoaking, Until: &until},
		convoyv1alpha1.PartitionStatus{Name: "normal", State: convoyv1alpha1.PartitionPending})
	g.Expect(d.noteGate(context.Background(), snap)).To(Succeed())
	g.Expect(d.noteGate(context.Background(), snap)).To(Succeed())
	g.Expect(strings.Count(out.String(), "Soak:")).To(Equal(1), out.String())
	g.Expect(out.String()).To(ContainSubstring(
		"Soak: partition early is done; it soaks for 5s, until 12:03:04 UTC, before partition normal starts."))
}

func TestNoteGatePrintsTheApproveCommandAndWaitsForAPerson(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	a := &approvals{}
	d := gatedDemo(&out, false, a)
	snap := gatedSnapshot("extra-component-1", convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateApproval, Partition: "late"})
	g.Expect(d.noteGate(context.Background(), snap)).To(Succeed())
	g.Expect(d.noteGate(context.Background(), snap)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring(
		"Approval: partition late waits for an approval of revision extra-component-1 (commit 0123456789ab)."))
	g.Expect(strings.Count(out.String(), "\n"+noteIndent+"  convoy approve extra-component --partition late --kubeconfig /tmp/convoy-dev/kubeconfig\n")).
		To(Equal(1), out.String())
	g.Expect(out.String()).NotTo(ContainSubstring("--exit-after-rollout"))
	g.Expect(a.partitions).To(BeEmpty())
}

func TestNoteGateApprovesEachRevisionItselfUnderExitAfterRollout(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	a := &approvals{}
	d := gatedDemo(&out, true, a)
	gate := convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateApproval, Partition: "late"}
	g.Expect(d.noteGate(context.Background(), gatedSnapshot("extra-component-1", gate))).To(Succeed())
	g.Expect(out.String()).NotTo(ContainSubstring("does not count"))
	g.Expect(d.noteGate(context.Background(), gatedSnapshot("extra-component-1", gate))).To(Succeed())
	g.Expect(d.noteGate(context.Background(), gatedSnapshot("extra-component-2", gate))).To(Succeed())

	g.Expect(a.partitions).To(Equal([]string{"late", "late"}), "one approval per revision")
	text := out.String()
	g.Expect(strings.Count(text, "--exit-after-rollout: the demo runs that command itself:")).To(Equal(2), text)
	g.Expect(text).To(ContainSubstring(noteIndent + "  approved partition late of extra-component (/tmp/convoy-dev/kubeconfig)\n"))
	g.Expect(text).To(ContainSubstring("An approval names its revision: the one of the previous commit does not count."))
}

func TestNoteGateReturnsTheErrorOfAnApproval(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	d := gatedDemo(&out, true, &approvals{})
	d.opts.Approve = func(_ context.Context, _, _, _ string, out io.Writer) error {
		fmt.Fprintln(out, "Error: forbidden")
		return fmt.Errorf("exit status 1")
	}
	gate := convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateApproval, Partition: "late"}
	g.Expect(d.noteGate(context.Background(), gatedSnapshot("extra-component-1", gate))).To(MatchError("exit status 1"))
	g.Expect(out.String()).To(ContainSubstring("Error: forbidden"), "what the command said is shown")
}

func TestApproveCommandLineQuotesAKubeconfigWithSpaces(t *testing.T) {
	g := NewWithT(t)
	g.Expect(approveCommandLine("extra-component", "late", "/tmp/convoy-dev/kubeconfig")).
		To(Equal("convoy approve extra-component --partition late --kubeconfig /tmp/convoy-dev/kubeconfig"))
	g.Expect(approveCommandLine("extra-component", "late", "/home/me/my demo/it's")).
		To(Equal(`convoy approve extra-component --partition late --kubeconfig '/home/me/my demo/it'\''s'`))
}
