package hostile

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// approvalsFleetLabel selects the two HostedClusters of the approval cases.
const approvalsFleetLabel = "test.convoy.dev/approvals"

// uncountedFor is how long an approval that must not count is watched not counting: the
// controller answers an approval's creation within a pass, well under a second.
const uncountedFor = 5 * time.Second

// approvalRollout is a rollout over early and late whose partition late requires an approval,
// with its repository.
type approvalRollout struct {
	ns, name string
	uid      types.UID
	repo     *gitserver.Repo
}

// TestHostileApprovals forges approvals against a rollout waiting for one at partition late,
// through the `convoy controller` process: an approval naming another rollout's UID, one of
// another commit under the waiting revision's name, one from another team's namespace and a
// cluster-scoped RolloutApproval the rollout does not own; none lets late start, and the exact
// approval then does. An exact approval of a revision that a rollback rejected does not either.
func TestHostileApprovals(t *testing.T) {
	env.Require(t)
	r := startRun(t)
	g := NewWithT(t)
	hcs, err := env.AddHostedClusters(r.ctx,
		fleet.HostedClusterInput{Name: "approvals-early", Labels: map[string]string{riskKey: "early", approvalsFleetLabel: "true"}},
		fleet.HostedClusterInput{Name: "approvals-late", Labels: map[string]string{riskKey: "late", approvalsFleetLabel: "true"}})
	g.Expect(err).NotTo(HaveOccurred())
	for _, hc := range hcs {
		t.Cleanup(func() { _ = hc.StopAPIServer() })
	}
	late := hcs[1].HCPNamespace
	a := r.newApprovalRollout(t, approvalsFleetLabel)
	b := r.newApprovalRollout(t, "test.convoy.dev/selects-nothing")
	c1 := a.push(g, 1)
	rev1 := r.awaitApproval(g, a, c1)

	forged := map[string]client.Object{
		"an approval of another rollout's UID":                       a.approval(a.ns, b.uid, rev1, c1),
		"an approval of another commit under the same revision name": a.approval(a.ns, a.uid, rev1, strings.Repeat("f", 40)),
		"an approval from another team's namespace":                  a.approval(b.ns, a.uid, rev1, c1),
		"a cluster-scoped RolloutApproval the rollout does not own": &convoyv1alpha1.RolloutApproval{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "forged-"},
			Spec:       convoyv1alpha1.RolloutApprovalSpec{HostedClusterPackage: a.name, Partition: "late", Revision: rev1, Commit: c1}},
	}
	for name, obj := range forged {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(r.c.Create(r.ctx, obj)).To(Succeed())
			r.expectNotStarted(g, a, late, c1)
		})
	}
	t.Run("the exact approval lets late start", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(r.c.Create(r.ctx, a.approval(a.ns, a.uid, rev1, c1))).To(Succeed())
		g.Eventually(func(g Gomega) { g.Expect(r.packageCommit(g, a, late)).To(Equal(c1)) }, progressBound, 200*time.Millisecond).Should(Succeed())
	})
	t.Run("an approval of a rejected revision", func(t *testing.T) {
		g := NewWithT(t)
		c2 := a.push(g, 2)
		rev2 := r.awaitApproval(g, a, c2)
		cr := &appsv1.ControllerRevision{}
		g.Expect(r.c.Get(r.ctx, client.ObjectKey{Namespace: a.ns, Name: rev2}, cr)).To(Succeed())
		cr.Annotations["convoy.dev/rejected"] = "rejected by the failure policy"
		g.Expect(r.c.Update(r.ctx, cr)).To(Succeed())
		// Note: the controller does not watch ControllerRevisions; an approval of early, which
		// needs none, makes it read the rejection, as its own pass after a rollback would.
		g.Eventually(func(g Gomega) {
			rejected := r.rollout(g, a).Status.RejectedRevision
			if rejected == "" {
				nudge := a.approval(a.ns, a.uid, rev2, c2)
				nudge.Spec.Partition = "early"
				g.Expect(r.c.Create(r.ctx, nudge)).To(Succeed())
			}
			g.Expect(rejected).To(Equal(rev2))
		}, progressBound, time.Second).Should(Succeed())
		g.Expect(r.c.Create(r.ctx, a.approval(a.ns, a.uid, rev2, c2))).To(Succeed())
		g.Consistently(func(g Gomega) { g.Expect(r.packageCommit(g, a, late)).To(Equal(c1)) }, uncountedFor, 200*time.Millisecond).Should(Succeed())
	})
}

// newApprovalRollout makes a namespace with a repository, its GitSource, and a rollout of it
// over the HostedClusters labelled selector whose partition late requires an approval.
func (r *run) newApprovalRollout(t *testing.T, selector string) *approvalRollout {
	t.Helper()
	g := NewWithT(t)
	ns := fleet.NewNamespaceIn(t, r.c)
	repo, err := r.git.CreateRepo(ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.c.Create(r.ctx, &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gitSourceName},
		Spec: convoyv1alpha1.GitSourceSpec{URL: r.git.HTTPURL(ns), Ref: convoyv1alpha1.GitRef{Branch: "main"},
			Interval: &metav1.Duration{Duration: time.Second}}})).To(Succeed())
	one := intstr.FromInt32(1)
	obj := &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			HostedClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{selector: "true"}},
			Partition: &convoyv1alpha1.PartitionSpec{LabelKey: riskKey,
				Order:    convoyv1alpha1.PartitionOrder{Static: []string{"early", "late"}},
				Policies: []convoyv1alpha1.PartitionPolicy{{Name: "late", RequireApproval: true}}},
			Strategy: convoyv1alpha1.HostedClusterPackageStrategy{
				RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{MaxUnavailable: &one}},
			Template: convoyv1alpha1.PackageTemplate{Spec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Namespace: ns, Name: gitSourceName}, Path: packagePath,
				Interval: &metav1.Duration{Duration: time.Minute}}},
		},
	}
	g.Expect(r.c.Create(r.ctx, obj)).To(Succeed())
	t.Cleanup(func() { _ = r.c.Delete(context.Background(), obj) })
	return &approvalRollout{ns: ns, name: obj.Name, uid: obj.UID, repo: repo}
}

// push commits version n of the add-on and returns the commit.
func (a *approvalRollout) push(g Gomega, n int) string {
	commit, err := a.repo.Commit("main", "add-on", map[string]string{
		packagePath + "/manifest.yaml": "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: addon}\nspec:\n  phases:\n  - {name: deploy}\n",
		packagePath + "/addon.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: addon-" + a.ns +
			", annotations: {convoy.dev/phase: deploy}}\ndata: {v: \"" + strings.Repeat("v", n) + "\"}\n",
	})
	g.Expect(err).NotTo(HaveOccurred())
	return commit
}

// approval is a PartitionApproval of late in ns naming the rollout with uid, at revision and
// commit.
func (a *approvalRollout) approval(ns string, uid types.UID, revision, commit string) *convoyv1alpha1.PartitionApproval {
	return &convoyv1alpha1.PartitionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "forged-"},
		Spec: convoyv1alpha1.PartitionApprovalSpec{HostedClusterPackage: a.name, HostedClusterPackageUID: string(uid),
			Partition: "late", Revision: revision, Commit: commit}}
}

// awaitApproval waits until the rollout's update revision is of commit and late awaits its
// approval, and returns the revision.
func (r *run) awaitApproval(g Gomega, a *approvalRollout, commit string) string {
	var rev string
	g.Eventually(func(g Gomega) {
		obj := r.rollout(g, a)
		g.Expect(obj.Status.Gate).NotTo(BeNil())
		g.Expect(*obj.Status.Gate).To(And(HaveField("Type", convoyv1alpha1.GateApproval), HaveField("Partition", "late")))
		rev = obj.Status.UpdateRevision
		cr := &appsv1.ControllerRevision{}
		g.Expect(r.c.Get(r.ctx, client.ObjectKey{Namespace: a.ns, Name: rev}, cr)).To(Succeed())
		g.Expect(string(cr.Data.Raw)).To(ContainSubstring(commit))
	}, progressBound, 200*time.Millisecond).Should(Succeed(), "late awaits an approval of %s", commit)
	return rev
}

// expectNotStarted checks, for a while, that late's HCP namespace has no Package of commit and
// that the rollout still waits for an approval of late.
func (r *run) expectNotStarted(g Gomega, a *approvalRollout, late, commit string) {
	g.Consistently(func(g Gomega) {
		g.Expect(r.packageCommit(g, a, late)).NotTo(Equal(commit))
		g.Expect(r.rollout(g, a).Status.Gate).To(HaveField("Type", convoyv1alpha1.GateApproval))
	}, uncountedFor, 200*time.Millisecond).Should(Succeed(), "the approval does not count")
}

// packageCommit returns the commit of the rollout's Package in ns; empty when it has none.
func (r *run) packageCommit(g Gomega, a *approvalRollout, ns string) string {
	p := &convoyv1alpha1.Package{}
	err := r.c.Get(r.ctx, client.ObjectKey{Namespace: ns, Name: a.name}, p)
	if client.IgnoreNotFound(err) != nil {
		g.Expect(err).NotTo(HaveOccurred())
	}
	return p.Spec.Revision
}

// rollout reads the rollout.
func (r *run) rollout(g Gomega, a *approvalRollout) *convoyv1alpha1.HostedClusterPackage {
	obj := &convoyv1alpha1.HostedClusterPackage{}
	g.Expect(r.c.Get(r.ctx, client.ObjectKey{Name: a.name}, obj)).To(Succeed())
	return obj
}
