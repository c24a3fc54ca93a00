package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// approvalRiskKey is the partition label of TestApproveLetsAWaitingPartitionStart.
const approvalRiskKey = "hypershift.openshift.io/risk-group"

// approveCommandLine finds, in the text of `convoy status`, the command that approves the
// partition awaiting an approval.
var approveCommandLine = regexp.MustCompile(`AwaitingApproval: (convoy approve \S+ --partition \S+)\n`)

// TestApproveLetsAWaitingPartitionStart runs the controllers in the test's process on a real API
// server and real Git, with six HostedClusters in early, normal and late and normal requiring an
// approval. The rollout of the first commit waits at normal; `convoy status` prints the command
// to type, and running it through convoy's command tree lets the rollout complete. The next
// commit waits at normal again, the approval of the first one notwithstanding, until `convoy
// approve` approves it too.
func TestApproveLetsAWaitingPartitionStart(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, repo, first := startApprovalFleet(ctx, t)
	defer func() { _ = f.Stop() }()
	stopped := make(chan error, 1)
	opts, err := devControllerOptions(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	go func() { stopped <- runController(ctx, f.Config, opts) }()
	defer func() {
		cancel()
		g.Expect(<-stopped).To(Succeed(), "the controller stops cleanly")
	}()
	kubeconfig := writeKubeconfig(t, f)

	rev1 := awaitApproval(ctx, g, f.Client, first)
	out, _, err := runCLI("status", "addon", "--kubeconfig", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	command := approveCommandLine.FindStringSubmatch(out)
	g.Expect(command).To(HaveLen(2), "convoy status says what to type:\n%s", out)
	g.Expect(command[1]).To(Equal("convoy approve addon --partition normal"))
	runApproveLine(g, kubeconfig, command[1], rev1, first)
	awaitRolledOut(ctx, g, f.Client, first)

	second := gittest.Commit(t, repo, "two", addonFiles("two"))
	rev2 := awaitApproval(ctx, g, f.Client, second)
	g.Expect(rev2).NotTo(Equal(rev1))
	g.Consistently(func(g Gomega) {
		g.Expect(addonRevisions(ctx, g, f.Client)).To(Equal(map[string]string{"early-1": second, "early-2": second,
			"normal-3": first, "normal-4": first, "late-5": first, "late-6": first}))
	}).WithTimeout(2*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(),
		"the approval of the first commit does not let the second through")
	runApproveLine(g, kubeconfig, command[1], rev2, second)
	awaitRolledOut(ctx, g, f.Client, second)
}

// startApprovalFleet starts a management cluster with six HostedClusters (no hosted API servers:
// the add-on is applied on the management side), a Git repository with a first commit of the
// add-on and its GitSource "addons", and the HostedClusterPackage "addon" of
// TestApproveLetsAWaitingPartitionStart; it returns the fleet, the repository and the commit.
func startApprovalFleet(ctx context.Context, t *testing.T) (*fleet.Fleet, *gitserver.Repo, string) {
	t.Helper()
	g := NewWithT(t)
	f, err := fleet.Start(ctx, fleet.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	var inputs []fleet.HostedClusterInput
	for _, name := range []string{"early-1", "early-2", "normal-3", "normal-4", "late-5", "late-6"} {
		partition, _, _ := strings.Cut(name, "-")
		inputs = append(inputs, fleet.HostedClusterInput{Name: name, WithoutAPIServer: true,
			Labels: map[string]string{approvalRiskKey: partition, "approval-test": "true"}})
	}
	_, err = f.AddHostedClusters(ctx, inputs...)
	g.Expect(err).NotTo(HaveOccurred())
	srv, repo := gittest.NewServer(t)
	first := gittest.Commit(t, repo, "one", addonFiles("one"))
	g.Expect(f.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shardTestNamespace}})).To(Succeed())
	g.Expect(f.Client.Create(ctx, shardTestSource(srv.HTTPURL("repo")))).To(Succeed())
	g.Expect(f.Client.Create(ctx, approvalTestRollout())).To(Succeed())
	return f, repo, first
}

// approvalTestRollout rolls the add-on out to the HostedClusters of the test, two at a time,
// partition normal waiting for an approval.
func approvalTestRollout() *convoyv1alpha1.HostedClusterPackage {
	two := intstr.FromInt32(2)
	return &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: "addon"},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			HostedClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"approval-test": "true"}},
			Partition: &convoyv1alpha1.PartitionSpec{LabelKey: approvalRiskKey,
				Order:    convoyv1alpha1.PartitionOrder{Static: []string{"early", "normal", "late"}},
				Policies: []convoyv1alpha1.PartitionPolicy{{Name: "normal", RequireApproval: true}}},
			Strategy: convoyv1alpha1.HostedClusterPackageStrategy{
				RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{MaxUnavailable: &two}},
			Template: convoyv1alpha1.PackageTemplate{Spec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Namespace: shardTestNamespace, Name: "addons"}, Path: "addon"}},
		},
	}
}

// awaitApproval waits until partition normal of the add-on awaits an approval of the revision
// of commit, early alone on it, and returns that revision.
func awaitApproval(ctx context.Context, g *WithT, c client.Client, commit string) string {
	var rev string
	g.Eventually(func(g Gomega) {
		obj := &convoyv1alpha1.HostedClusterPackage{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: "addon"}, obj)).To(Succeed())
		g.Expect(obj.Status.Gate).To(And(HaveField("Type", convoyv1alpha1.GateApproval), HaveField("Partition", "normal")))
		g.Expect(obj.Status.Partitions).To(ContainElement(And(HaveField("Name", "normal"),
			HaveField("State", convoyv1alpha1.PartitionAwaitingApproval))))
		revisions := addonRevisions(ctx, g, c)
		g.Expect(revisions).To(And(HaveKeyWithValue("early-1", commit), HaveKeyWithValue("early-2", commit)))
		for hc, at := range revisions {
			if !strings.HasPrefix(hc, "early-") {
				g.Expect(at).NotTo(Equal(commit), hc)
			}
		}
		rev = obj.Status.UpdateRevision
	}).WithTimeout(90*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "normal awaits an approval of %s", commit)
	return rev
}

// runApproveLine runs line, a `convoy approve` command as `convoy status` prints it, through
// convoy's command tree against kubeconfig, and checks that it approved rev of commit.
func runApproveLine(g *WithT, kubeconfig, line, rev, commit string) {
	args := append(strings.Fields(line)[1:], "--kubeconfig", kubeconfig)
	out, _, err := runCLI(args...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("approved partition normal of addon at revision " + rev + " (commit " + commit[:7] + "): PartitionApproval " + shardTestNamespace + "/addon-"))
}

// awaitRolledOut waits until every Package of the add-on is on commit and the rollout is Ready.
func awaitRolledOut(ctx context.Context, g *WithT, c client.Client, commit string) {
	g.Eventually(func(g Gomega) {
		revisions := addonRevisions(ctx, g, c)
		g.Expect(revisions).To(HaveLen(6))
		for hc, at := range revisions {
			g.Expect(at).To(Equal(commit), hc)
		}
		obj := &convoyv1alpha1.HostedClusterPackage{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: "addon"}, obj)).To(Succeed())
		g.Expect(obj.Status.ProgressedPackages).To(BeEquivalentTo(6))
		g.Expect(obj.Status.CurrentRevision).To(Equal(obj.Status.UpdateRevision))
		g.Expect(obj.Status.Gate).To(BeNil())
	}).WithTimeout(90*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "the rollout of %s completes", commit)
}

// addonRevisions returns the commit each Package of the add-on is pinned to, by HostedCluster.
func addonRevisions(ctx context.Context, g Gomega, c client.Client) map[string]string {
	list := &convoyv1alpha1.PackageList{}
	g.Expect(c.List(ctx, list, client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: "addon"})).To(Succeed())
	out := map[string]string{}
	for _, p := range list.Items {
		out[strings.TrimPrefix(p.Namespace, "clusters-")] = p.Spec.Revision
	}
	return out
}
