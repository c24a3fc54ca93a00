package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/gittest"
)

// TestRolloutAwaitingALegacyApprovalGoesOnAfterTheUpgrade sets up, as the previous release left
// it, a rollout whose partition late requires an approval: its ControllerRevision named with 40
// bits of the hash and the cluster-scoped RolloutApproval its `convoy approve` made (owned by
// the rollout, with the commit). The upgraded controller, locked down as installed, keeps the
// revision's name and counts the approval: late gets the commit.
func TestRolloutAwaitingALegacyApprovalGoesOnAfterTheUpgrade(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	hcs, err := env.AddHostedClusters(ctx,
		fleet.HostedClusterInput{Name: "legacy-early", Labels: map[string]string{partitionLabel: "early", "convoy.dev/upgrade-test": ns}},
		fleet.HostedClusterInput{Name: "legacy-late", Labels: map[string]string{partitionLabel: "late", "convoy.dev/upgrade-test": ns}})
	g.Expect(err).NotTo(HaveOccurred())
	for _, hc := range hcs {
		t.Cleanup(func() { _ = hc.StopAPIServer() })
	}
	srv, repo := gittest.NewServer(t)
	commit := gittest.Commit(t, repo, "config", map[string]string{"config/manifest.yaml": manifest("config"),
		"config/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  annotations: {convoy.dev/phase: deploy}\n"})
	g.Expect(env.Client.Create(ctx, &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "addons"},
		Spec: convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL("repo"), Ref: convoyv1alpha1.GitRef{Branch: "main"},
			Interval: &metav1.Duration{Duration: time.Second}}})).To(Succeed())
	hcpkg := legacyRollout(ns)
	g.Expect(env.Client.Create(ctx, hcpkg)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, hcpkg) })
	revision := createLegacyRevision(ctx, g, hcpkg, commit)
	g.Expect(env.Client.Create(ctx, &convoyv1alpha1.RolloutApproval{
		ObjectMeta: metav1.ObjectMeta{GenerateName: hcpkg.Name + "-", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: convoyv1alpha1.GroupVersion.String(), Kind: "HostedClusterPackage", Name: hcpkg.Name, UID: hcpkg.UID}}},
		Spec: convoyv1alpha1.RolloutApprovalSpec{HostedClusterPackage: hcpkg.Name, Partition: "late", Revision: revision, Commit: commit},
	})).To(Succeed())

	startControllerAs(t, serviceAccountKubeconfig(t))
	g.Eventually(func(g Gomega) {
		for _, hc := range hcs {
			p := &convoyv1alpha1.Package{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: hc.HCPNamespace, Name: hcpkg.Name}, p)).To(Succeed(), hc.Name)
			g.Expect(p.Spec.Revision).To(Equal(commit), hc.Name)
		}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hcpkg), hcpkg)).To(Succeed())
		g.Expect(hcpkg.Status.UpdateRevision).To(Equal(revision), "the revision keeps its name")
	}, settleTimeout, time.Second).Should(Succeed(), "late starts on the previous release's approval")
}

// legacyRollout is a rollout of ns's GitSource over the two HostedClusters of the test, whose
// partition late requires an approval.
func legacyRollout(ns string) *convoyv1alpha1.HostedClusterPackage {
	one := intstr.FromInt32(1)
	return &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "legacy-" + ns},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			HostedClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"convoy.dev/upgrade-test": ns}},
			Partition: &convoyv1alpha1.PartitionSpec{LabelKey: partitionLabel,
				Order:    convoyv1alpha1.PartitionOrder{Static: []string{"early", "late"}},
				Policies: []convoyv1alpha1.PartitionPolicy{{Name: "late", RequireApproval: true}}},
			Strategy: convoyv1alpha1.HostedClusterPackageStrategy{RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{MaxUnavailable: &one}},
			Template: convoyv1alpha1.PackageTemplate{Spec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Name: "addons", Namespace: ns}, Path: "config"}}}}
}

// createLegacyRevision creates the ControllerRevision of (commit, hcpkg's template) as the
// previous release made it, "<name>-<the first 10 hex digits of the SHA-256 of its data>", and
// returns its name.
func createLegacyRevision(ctx context.Context, g Gomega, hcpkg *convoyv1alpha1.HostedClusterPackage, commit string) string {
	data, err := json.Marshal(struct {
		Commit   string                             `json:"commit"`
		Template convoyv1alpha1.PackageTemplateSpec `json:"template"`
	}{commit, hcpkg.Spec.Template.Spec})
	g.Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256(data)
	name := hcpkg.Name + "-" + hex.EncodeToString(sum[:])[:10]
	yes := true
	g.Expect(env.Client.Create(ctx, &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: hcpkg.Spec.Template.Spec.SourceRef.Namespace, Name: name,
			Labels: map[string]string{convoyv1alpha1.HostedClusterPackageLabel: hcpkg.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: convoyv1alpha1.GroupVersion.String(), Kind: "HostedClusterPackage",
				Name: hcpkg.Name, UID: hcpkg.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Data:     runtime.RawExtension{Raw: data},
		Revision: 1,
	})).To(Succeed())
	return name
}
