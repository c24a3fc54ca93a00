package rolloutcontroller

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/test/fleet"
)

func TestRevisionNameAndData(t *testing.T) {
	g := NewWithT(t)
	template := convoyv1alpha1.PackageTemplateSpec{
		SourceRef: convoyv1alpha1.SourceReference{Namespace: "fleet", Name: "addons"}, Path: "pkg",
		Config: &runtime.RawExtension{Raw: []byte(`{ "b": 1, "a": {"y": true, "x": "s"} }`)},
	}
	commit := strings.Repeat("a", 40)
	rev, data, legacy, err := newRevision("addon", template, commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rev.Name).To(MatchRegexp(`^addon-[0-9a-f]{16}$`), "64 bits of the hash")
	g.Expect(legacy).To(Equal(rev.Name[:len(rev.Name)-6]), "the releases before kept 40 bits")
	g.Expect(string(rev.Template.Config.Raw)).To(Equal(`{"a":{"x":"s","y":true},"b":1}`), "canonical config")

	same, _, _, err := newRevision("addon", rev.Template, commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same.Name).To(Equal(rev.Name), "the hash does not depend on the config's formatting")
	other, _, _, _ := newRevision("addon", template, strings.Repeat("b", 40))
	g.Expect(other.Name).NotTo(Equal(rev.Name), "a new commit is a new revision")
	template.Path = "other"
	edited, _, _, _ := newRevision("addon", template, commit)
	g.Expect(edited.Name).NotTo(Equal(rev.Name), "a template edit is a new revision")

	decoded, err := decodeRevision(&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: rev.Name},
		Data: runtime.RawExtension{Raw: data}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(decoded.rev).To(Equal(rev), "the data rebuilds the template and the commit")

	g.Expect(revisionName(strings.Repeat("x", 250), "0123456789abcdef")).To(HaveLen(253))
}

// TestLegacyRevisionIsAdopted checks the upgrade from the releases that named revisions with
// 40 bits of the hash: the same commit and template keep the legacy ControllerRevision (and so
// the rollout in flight, its status and approvals); a legacy name with another commit, the
// grinding of those 40 bits, adopts nothing.
func TestLegacyRevisionIsAdopted(t *testing.T) {
	template := convoyv1alpha1.PackageTemplateSpec{SourceRef: convoyv1alpha1.SourceReference{Namespace: "fleet", Name: "addons"}, Path: "pkg"}
	commit := strings.Repeat("a", 40)
	stored := func(name, commit string, template convoyv1alpha1.PackageTemplateSpec) storedRevision {
		return storedRevision{obj: &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}},
			rev: rollout.Revision{Name: name, Commit: commit, Template: template}}
	}
	edited := template
	edited.Path = "other"
	for _, tc := range []struct {
		name  string
		with  func(legacy string) storedRevision
		adopt bool
	}{
		{"same commit and template", func(legacy string) storedRevision { return stored(legacy, commit, template) }, true},
		{"another commit under the legacy name", func(legacy string) storedRevision {
			return stored(legacy, strings.Repeat("b", 40), template)
		}, false},
		{"another template under the legacy name", func(legacy string) storedRevision { return stored(legacy, commit, edited) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rev, _, legacy, err := newRevision("addon", template, commit)
			g.Expect(err).NotTo(HaveOccurred())
			s := &scope{update: rev, updateLegacy: legacy, revisions: []storedRevision{tc.with(legacy)}}
			adoptLegacyRevision(s)
			if tc.adopt {
				g.Expect(s.update.Name).To(Equal(legacy))
			} else {
				g.Expect(s.update.Name).To(Equal(rev.Name))
			}
		})
	}
}

func TestRevisionsToPrune(t *testing.T) {
	g := NewWithT(t)
	var revs []storedRevision
	for i, name := range []string{"r1", "r2", "r3", "r4", "r5", "r6"} {
		revs = append(revs, storedRevision{obj: &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Revision: int64(i + 1)}})
	}
	names := func(crs []*appsv1.ControllerRevision) []string {
		var out []string
		for _, cr := range crs {
			out = append(out, cr.Name)
		}
		return out
	}
	keep := map[string]bool{"r6": true, "r5": true, "r1": true}
	g.Expect(names(revisionsToPrune(revs, 1, keep))).To(Equal([]string{"r2", "r3"}), "oldest history first, kept ones never")
	g.Expect(revisionsToPrune(revs, 3, keep)).To(BeEmpty())
	g.Expect(names(revisionsToPrune(revs, 0, keep))).To(Equal([]string{"r2", "r3", "r4"}))
}

// TestRevisionHistoryIsPruned pushes commits to a HostedClusterPackage that selects no
// HostedCluster, so that each rollout completes at once, and checks the ControllerRevisions;
// each revision is approved, and the approvals of pruned revisions go with them.
func TestRevisionHistoryIsPruned(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	repo := newSource(t, ns)
	name := "history-" + fleet.NameSuffix()
	limit := int32(1)
	_, err := repo.Commit("main", "one", gatePackage(1, true, false))
	g.Expect(err).NotTo(HaveOccurred())
	newHostedClusterPackage(t, name, ns, func(h *convoyv1alpha1.HostedClusterPackage) { h.Spec.RevisionHistoryLimit = &limit })

	revisions := func(g Gomega) []appsv1.ControllerRevision {
		list := &appsv1.ControllerRevisionList{}
		g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		return list.Items
	}
	for n := 2; n <= 4; n++ {
		g.Eventually(func(g Gomega) {
			st := getHCPkg(g, name).Status
			g.Expect(st.UpdateRevision).NotTo(BeEmpty())
			g.Expect(st.CurrentRevision).To(Equal(st.UpdateRevision))
			g.Expect(revisions(g)).To(ContainElement(HaveField("Name", st.UpdateRevision)))
		}).Should(Succeed())
		approve(g, name, ns, "all", getHCPkg(g, name).Status.UpdateRevision)
		c, err := repo.Commit("main", "next", gatePackage(n, true, false))
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			st := getHCPkg(g, name).Status
			g.Expect(revisions(g)).To(ContainElement(HaveField("Name", st.UpdateRevision)))
			var data revisionData
			for _, cr := range revisions(g) {
				if cr.Name == st.UpdateRevision {
					g.Expect(json.Unmarshal(cr.Data.Raw, &data)).To(Succeed())
					g.Expect(cr.Revision).To(Equal(int64(n)))
				}
			}
			g.Expect(data.Commit).To(Equal(c))
			g.Expect(data.Template.Path).To(Equal("pkg"))
		}).Should(Succeed())
	}
	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, name).Status
		g.Expect(st.CurrentRevision).To(Equal(st.UpdateRevision))
		g.Expect(revisions(g)).To(HaveLen(2), "the update revision and one older one")
		g.Expect(revisions(g)).To(ContainElements(HaveField("Revision", int64(3)), HaveField("Revision", int64(4))))
		var third string
		for _, cr := range revisions(g) {
			if cr.Revision == 3 {
				third = cr.Name
			}
		}
		g.Expect(approvedRevisions(g, name)).To(ConsistOf(third), "the approval of revision 3 only: 1 and 2 were pruned, 4 was never approved")
	}).Should(Succeed())
}

// approve creates, as `convoy approve` does, a PartitionApproval in namespace (the GitSource's)
// of partition of hcpkg at revision: bound to hcpkg's UID and to the commit of the revision's
// ControllerRevision (zeros when there is none).
func approve(g Gomega, hcpkg, namespace, partition, revision string) *convoyv1alpha1.PartitionApproval {
	ctx := context.Background()
	obj := &convoyv1alpha1.HostedClusterPackage{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: hcpkg}, obj)).To(Succeed())
	commit := strings.Repeat("0", 40)
	cr := &appsv1.ControllerRevision{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: revision}, cr); err == nil {
		var data revisionData
		g.Expect(json.Unmarshal(cr.Data.Raw, &data)).To(Succeed())
		commit = data.Commit
	}
	a := &convoyv1alpha1.PartitionApproval{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: hcpkg + "-"},
		Spec: convoyv1alpha1.PartitionApprovalSpec{HostedClusterPackage: hcpkg, HostedClusterPackageUID: string(obj.UID),
			Partition: partition, Revision: revision, Commit: commit}}
	g.Expect(env.Client.Create(ctx, a)).To(Succeed())
	return a
}

// approvedRevisions returns the revisions of the PartitionApprovals of hcpkg.
func approvedRevisions(g Gomega, hcpkg string) []string {
	list := &convoyv1alpha1.PartitionApprovalList{}
	g.Expect(env.Client.List(context.Background(), list)).To(Succeed())
	var out []string
	for _, a := range list.Items {
		if a.Spec.HostedClusterPackage == hcpkg {
			out = append(out, a.Spec.Revision)
		}
	}
	return out
}
