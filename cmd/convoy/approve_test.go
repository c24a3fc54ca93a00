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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// approveCommit is the commit of the update revision in TestApproveCreatesOneApprovalOfTheUpdateRevision.
const approveCommit = "abc1234def5678abc1234def5678abc1234def56"

// TestApproveCreatesOneApprovalOfTheUpdateRevision runs `convoy approve` on a real API server
// as a ServiceAccount bound to the ClusterRole convoy-rollout-approver of deploy/ only: it
// approves a partition at the update revision, once, refuses a partition or a revision the
// rollout does not have, and may not edit the HostedClusterPackage.
func TestApproveCreatesOneApprovalOfTheUpdateRevision(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := fleet.Start(ctx, fleet.Options{WithoutHyperShift: true})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Stop() }()
	hcpkg := createApprovableRollout(ctx, g, f.Client)
	approver := approverClient(ctx, g, f)

	var out bytes.Buffer
	g.Expect(runApprove(ctx, approver, &out, hcpkg.Name, approveOptions{partition: "normal"})).To(Succeed())
	g.Expect(out.String()).To(HavePrefix("approved partition normal of rollout at revision rollout-5d8f (commit abc1234): RolloutApproval rollout-"))
	list := &convoyv1alpha1.RolloutApprovalList{}
	g.Expect(f.Client.List(ctx, list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	a := list.Items[0]
	g.Expect(a.Spec).To(Equal(convoyv1alpha1.RolloutApprovalSpec{HostedClusterPackage: "rollout", Partition: "normal",
		Revision: "rollout-5d8f", Commit: approveCommit}))
	g.Expect(a.OwnerReferences).To(ConsistOf(HaveField("UID", hcpkg.UID)), "garbage collected with the rollout")
	g.Expect(a.Labels).To(HaveKeyWithValue(convoyv1alpha1.HostedClusterPackageLabel, "rollout"))

	t.Run("an approval that exists is not created again", func(t *testing.T) {
		g := NewWithT(t)
		var out bytes.Buffer
		g.Expect(runApprove(ctx, approver, &out, "rollout", approveOptions{partition: "normal", revision: "rollout-5d8f"})).To(Succeed())
		g.Expect(out.String()).To(Equal("already approved: partition normal of rollout at revision rollout-5d8f (commit abc1234) by RolloutApproval " +
			a.Name + "; nothing created\n"))
		g.Expect(f.Client.List(ctx, list)).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
	})
	t.Run("a partition that needs no approval is approved with a note", func(t *testing.T) {
		g := NewWithT(t)
		var out bytes.Buffer
		g.Expect(runApprove(ctx, approver, &out, "rollout", approveOptions{partition: "late"})).To(Succeed())
		g.Expect(out.String()).To(HaveSuffix("note: partition late does not require an approval (spec.partition.policies)\n"))
	})
	t.Run("what the rollout does not have is refused", func(t *testing.T) {
		g := NewWithT(t)
		var out bytes.Buffer
		err := runApprove(ctx, approver, &out, "rollout", approveOptions{partition: "canary"})
		g.Expect(err).To(MatchError(`HostedClusterPackage rollout has no partition "canary"; its partitions are: early, normal, late`))
		err = runApprove(ctx, approver, &out, "rollout", approveOptions{partition: "normal", revision: "rollout-0000"})
		g.Expect(err).To(MatchError("HostedClusterPackage rollout has no revision rollout-0000 (its update revision is rollout-5d8f)"))
		err = runApprove(ctx, approver, &out, "missing", approveOptions{partition: "normal"})
		g.Expect(err).To(MatchError(ContainSubstring(`"missing" not found`)))
		g.Expect(out.String()).To(BeEmpty())
	})
	t.Run("the approver may not edit the rollout", func(t *testing.T) {
		g := NewWithT(t)
		obj := &convoyv1alpha1.HostedClusterPackage{}
		g.Expect(approver.Get(ctx, client.ObjectKey{Name: "rollout"}, obj)).To(Succeed())
		obj.Spec.Paused = true
		g.Expect(apierrors.IsForbidden(approver.Update(ctx, obj))).To(BeTrue())
		g.Expect(apierrors.IsForbidden(approver.Delete(ctx, &list.Items[0]))).To(BeTrue(), "nor withdraw an approval")
	})
}

// createApprovableRollout creates the HostedClusterPackage "rollout", whose partition normal
// requires an approval, with the status and the update revision its controller would write.
func createApprovableRollout(ctx context.Context, g Gomega, c client.Client) *convoyv1alpha1.HostedClusterPackage {
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}})).To(Succeed())
	hcpkg := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "rollout"},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			Partition: &convoyv1alpha1.PartitionSpec{LabelKey: "hypershift.openshift.io/risk-group",
				Policies: []convoyv1alpha1.PartitionPolicy{{Name: "normal", RequireApproval: true}}},
			Template: convoyv1alpha1.PackageTemplate{Spec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Namespace: "fleet", Name: "addons"}, Path: "pkg"}},
		}}
	g.Expect(c.Create(ctx, hcpkg)).To(Succeed())
	hcpkg.Status.UpdateRevision = "rollout-5d8f"
	for _, p := range []string{"early", "normal", "late"} {
		hcpkg.Status.Partitions = append(hcpkg.Status.Partitions, convoyv1alpha1.PartitionStatus{Name: p, Total: 2, State: convoyv1alpha1.PartitionPending})
	}
	g.Expect(c.Status().Update(ctx, hcpkg)).To(Succeed())
	yes := true
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "rollout-5d8f",
			Labels: map[string]string{convoyv1alpha1.HostedClusterPackageLabel: "rollout"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: convoyv1alpha1.GroupVersion.String(), Kind: "HostedClusterPackage",
				Name: "rollout", UID: hcpkg.UID, Controller: &yes}}},
		Data: runtime.RawExtension{Raw: []byte(`{"commit":"` + approveCommit + `","template":{"sourceRef":{"namespace":"fleet","name":"addons"},"path":"pkg"}}`)},
	}
	g.Expect(c.Create(ctx, cr)).To(Succeed())
	return hcpkg
}

// approverClient returns a client of a ServiceAccount bound to the convoy-rollout-approver
// ClusterRole of deploy/rbac, and to nothing else.
func approverClient(ctx context.Context, g Gomega, f *fleet.Fleet) client.Client {
	raw, err := os.ReadFile("../../deploy/rbac/rollout_approver_role.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	objs, err := manifests.DecodeObjects("rollout_approver_role.yaml", raw)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
	g.Expect(objs[0].GetName()).To(Equal("convoy-rollout-approver"))
	g.Expect(f.Client.Create(ctx, objs[0])).To(Succeed())
	cs, err := kubernetes.NewForConfig(f.Config)
	g.Expect(err).NotTo(HaveOccurred())
	token := serviceAccountToken(ctx, g, cs, "approver")
	g.Expect(f.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "approver"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "convoy-rollout-approver"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: "approver"}},
	})).To(Succeed())
	cfg := rest.AnonymousClientConfig(f.Config)
	cfg.BearerToken = token
	c, err := client.New(cfg, client.Options{Scheme: newCLIScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error { return c.List(ctx, &convoyv1alpha1.RolloutApprovalList{}) }).Should(Succeed(), "the binding is in force")
	return c
}
