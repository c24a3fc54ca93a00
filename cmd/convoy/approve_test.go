package main

import (
	"bytes"
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// approveCommit is the commit of the update revisions in TestApproveIsGrantedPerTeam.
const approveCommit = "abc1234def5678abc1234def5678abc1234def56"

// TestApproveIsGrantedPerTeam runs `convoy approve` and `convoy promote` on a real API server
// with the ClusterRoles of deploy/rbac and real RBAC, as impersonated users: alice, bound to
// convoy-rollout-approver in team-a (and convoy-rollout-reader), approves team-a's rollout once,
// is refused on team-b's, reads no ControllerRevision outside team-a, and may neither edit a
// rollout, withdraw an approval nor create a legacy, cluster-scoped one; carol, bound to
// convoy-promoter in team-a, promotes team-a's rollout and not team-b's.
func TestApproveIsGrantedPerTeam(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := fleet.Start(ctx, fleet.Options{WithoutHyperShift: true})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Stop() }()
	rolloutA := createApprovableRollout(ctx, g, f.Client, "rollout-a", "team-a")
	createApprovableRollout(ctx, g, f.Client, "rollout-b", "team-b")
	applyRoles(ctx, g, f.Client, "rollout_approver_role.yaml", "rollout_reader_role.yaml", "promoter_role.yaml")
	bind(ctx, g, f.Client, "team-a", "convoy-rollout-approver", "alice")
	bind(ctx, g, f.Client, "team-b", "convoy-rollout-approver", "bob")
	bind(ctx, g, f.Client, "team-a", "convoy-promoter", "carol")
	bind(ctx, g, f.Client, "", "convoy-rollout-reader", "alice", "bob", "carol")
	alice, carol := userClient(g, f.Config, "alice"), userClient(g, f.Config, "carol")

	var out bytes.Buffer
	g.Expect(runApprove(ctx, alice, &out, "rollout-a", approveOptions{partition: "normal"})).To(Succeed())
	g.Expect(out.String()).To(HavePrefix("approved partition normal of rollout-a at revision rollout-a-5d8f (commit abc1234): PartitionApproval team-a/rollout-a-"))
	list := &convoyv1alpha1.PartitionApprovalList{}
	g.Expect(f.Client.List(ctx, list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	a := list.Items[0]
	g.Expect(a.Namespace).To(Equal("team-a"))
	g.Expect(a.Spec).To(Equal(convoyv1alpha1.PartitionApprovalSpec{HostedClusterPackage: "rollout-a", HostedClusterPackageUID: string(rolloutA.UID),
		Partition: "normal", Revision: "rollout-a-5d8f", Commit: approveCommit}))
	g.Expect(a.OwnerReferences).To(ConsistOf(HaveField("UID", rolloutA.UID)), "garbage collected with the rollout")
	g.Expect(a.Labels).To(HaveKeyWithValue(convoyv1alpha1.HostedClusterPackageLabel, "rollout-a"))

	t.Run("an approval that exists is not created again", func(t *testing.T) {
		g := NewWithT(t)
		var out bytes.Buffer
		g.Expect(runApprove(ctx, alice, &out, "rollout-a", approveOptions{partition: "normal", revision: "rollout-a-5d8f"})).To(Succeed())
		g.Expect(out.String()).To(Equal("already approved: partition normal of rollout-a at revision rollout-a-5d8f (commit abc1234) by PartitionApproval team-a/" +
			a.Name + "; nothing created\n"))
		g.Expect(f.Client.List(ctx, list)).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
	})
	t.Run("a partition that needs no approval is approved with a note", func(t *testing.T) {
		g := NewWithT(t)
		var out bytes.Buffer
		g.Expect(runApprove(ctx, alice, &out, "rollout-a", approveOptions{partition: "late"})).To(Succeed())
		g.Expect(out.String()).To(HaveSuffix("note: partition late does not require an approval (spec.partition.policies)\n"))
	})
	t.Run("what the rollout does not have is refused", func(t *testing.T) {
		g := NewWithT(t)
		var out bytes.Buffer
		err := runApprove(ctx, alice, &out, "rollout-a", approveOptions{partition: "canary"})
		g.Expect(err).To(MatchError(`HostedClusterPackage rollout-a has no partition "canary"; its partitions are: early, normal, late`))
		err = runApprove(ctx, alice, &out, "rollout-a", approveOptions{partition: "normal", revision: "rollout-a-0000"})
		g.Expect(err).To(MatchError("HostedClusterPackage rollout-a has no revision rollout-a-0000 (its update revision is rollout-a-5d8f)"))
		err = runApprove(ctx, alice, &out, "missing", approveOptions{partition: "normal"})
		g.Expect(err).To(MatchError(ContainSubstring(`"missing" not found`)))
		g.Expect(out.String()).To(BeEmpty())
	})
	t.Run("team-a's approver is refused on team-b's rollout", func(t *testing.T) {
		g := NewWithT(t)
		var out bytes.Buffer
		err := runApprove(ctx, alice, &out, "rollout-b", approveOptions{partition: "normal"})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring(`cannot list resource "controllerrevisions" in API group "apps" in the namespace "team-b"`)))
		forged := &convoyv1alpha1.PartitionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", GenerateName: "forged-"},
			Spec: convoyv1alpha1.PartitionApprovalSpec{HostedClusterPackage: "rollout-b", HostedClusterPackageUID: "any",
				Partition: "normal", Revision: "rollout-b-5d8f", Commit: approveCommit}}
		g.Expect(apierrors.IsForbidden(alice.Create(ctx, forged))).To(BeTrue(), "nor may she write one there by hand")
		g.Expect(out.String()).To(BeEmpty())
		g.Expect(runApprove(ctx, userClient(g, f.Config, "bob"), &out, "rollout-b", approveOptions{partition: "normal"})).To(Succeed(),
			"team-b's approver may")
	})
	t.Run("the approver reads ControllerRevisions of her namespace only", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(alice.List(ctx, &appsv1.ControllerRevisionList{}, client.InNamespace("team-a"))).To(Succeed())
		for _, ns := range []string{"", "team-b", "kube-system"} {
			err := alice.List(ctx, &appsv1.ControllerRevisionList{}, client.InNamespace(ns))
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "namespace %q: %v", ns, err)
		}
	})
	t.Run("the approver may not edit the rollout, withdraw an approval or approve cluster-wide", func(t *testing.T) {
		g := NewWithT(t)
		obj := &convoyv1alpha1.HostedClusterPackage{}
		g.Expect(alice.Get(ctx, client.ObjectKey{Name: "rollout-a"}, obj)).To(Succeed())
		obj.Spec.Paused = true
		g.Expect(apierrors.IsForbidden(alice.Update(ctx, obj))).To(BeTrue())
		g.Expect(apierrors.IsForbidden(alice.Delete(ctx, &a))).To(BeTrue(), "nor withdraw an approval")
		legacy := &convoyv1alpha1.RolloutApproval{ObjectMeta: metav1.ObjectMeta{GenerateName: "legacy-"},
			Spec: convoyv1alpha1.RolloutApprovalSpec{HostedClusterPackage: "rollout-b", Partition: "normal", Revision: "rollout-b-5d8f"}}
		g.Expect(apierrors.IsForbidden(alice.Create(ctx, legacy))).To(BeTrue(), "nor create a legacy RolloutApproval")
	})
	t.Run("team-a's promoter promotes team-a's rollout and not team-b's", func(t *testing.T) {
		g := NewWithT(t)
		var out bytes.Buffer
		opts := promoteOptions{commit: approveCommit, sector: "eu"}
		g.Expect(runPromote(ctx, carol, &out, "rollout-a", opts)).To(Succeed())
		g.Expect(out.String()).To(HavePrefix("promoted commit abc1234def56 into sector eu for rollout-a: ManualPromotion team-a/rollout-a-"))
		err := runPromote(ctx, carol, &out, "rollout-b", opts)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		promotions := &convoyv1alpha1.ManualPromotionList{}
		g.Expect(f.Client.List(ctx, promotions)).To(Succeed())
		g.Expect(promotions.Items).To(ConsistOf(HaveField("Spec.HostedClusterPackageUID", string(rolloutA.UID))))
	})
}

// createApprovableRollout creates the HostedClusterPackage name, whose GitSource is in namespace
// ns and whose partition normal requires an approval, with the status and the update revision
// (name-5d8f, in ns) its controller would write.
func createApprovableRollout(ctx context.Context, g Gomega, c client.Client, name, ns string) *convoyv1alpha1.HostedClusterPackage {
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	hcpkg := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			Partition: &convoyv1alpha1.PartitionSpec{LabelKey: "hypershift.openshift.io/risk-group",
				Policies: []convoyv1alpha1.PartitionPolicy{{Name: "normal", RequireApproval: true}}},
			Template: convoyv1alpha1.PackageTemplate{Spec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Namespace: ns, Name: "addons"}, Path: "pkg"}},
			Promotion: &convoyv1alpha1.PromotionSpec{After: []convoyv1alpha1.UpstreamSector{{Sector: "canary"}}},
		}}
	g.Expect(c.Create(ctx, hcpkg)).To(Succeed())
	hcpkg.Status.UpdateRevision = name + "-5d8f"
	for _, p := range []string{"early", "normal", "late"} {
		hcpkg.Status.Partitions = append(hcpkg.Status.Partitions, convoyv1alpha1.PartitionStatus{Name: p, Total: 2, State: convoyv1alpha1.PartitionPending})
	}
	g.Expect(c.Status().Update(ctx, hcpkg)).To(Succeed())
	yes := true
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-5d8f",
			Labels: map[string]string{convoyv1alpha1.HostedClusterPackageLabel: name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: convoyv1alpha1.GroupVersion.String(), Kind: "HostedClusterPackage",
				Name: name, UID: hcpkg.UID, Controller: &yes}}},
		Data: runtime.RawExtension{Raw: []byte(`{"commit":"` + approveCommit + `","template":{"sourceRef":{"namespace":"` + ns + `","name":"addons"},"path":"pkg"}}`)},
	}
	g.Expect(c.Create(ctx, cr)).To(Succeed())
	return hcpkg
}

// applyRoles creates the ClusterRoles of the files of deploy/rbac.
func applyRoles(ctx context.Context, g Gomega, c client.Client, files ...string) {
	for _, file := range files {
		raw, err := os.ReadFile("../../deploy/rbac/" + file)
		g.Expect(err).NotTo(HaveOccurred())
		objs, err := manifests.DecodeObjects(file, raw)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(objs).To(HaveLen(1))
		g.Expect(objs[0].GetKind()).To(Equal("ClusterRole"))
		g.Expect(c.Create(ctx, objs[0])).To(Succeed())
	}
}

// bind binds the ClusterRole role to users: with a RoleBinding in ns, or a ClusterRoleBinding
// when ns is empty.
func bind(ctx context.Context, g Gomega, c client.Client, ns, role string, users ...string) {
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}
	var subjects []rbacv1.Subject
	for _, u := range users {
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	meta := metav1.ObjectMeta{Namespace: ns, Name: role + "-" + users[0]}
	if ns == "" {
		g.Expect(c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects})).To(Succeed())
		return
	}
	g.Expect(c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects})).To(Succeed())
}

// userClient returns a client that impersonates user, once the API server enforces the
// bindings made before (the reader's, which every user here has).
func userClient(g Gomega, cfg *rest.Config, user string) client.Client {
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: newCLIScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error {
		return c.List(context.Background(), &convoyv1alpha1.HostedClusterPackageList{})
	}).Should(Succeed(), "the bindings are in force")
	return c
}
