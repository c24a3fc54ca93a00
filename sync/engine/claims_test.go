package engine

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// marked returns a ConfigMap of namespace ns with labels, annotations and owner references.
func marked(labels, annotations map[string]string, refs ...metav1.OwnerReference) *unstructured.Unstructured {
	u := kubetest.ConfigMap("ns", "cm", nil)
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	u.SetOwnerReferences(refs)
	return u
}

func TestClaimsNameEveryOwnerAndTakeOverOnlyNamedOnes(t *testing.T) {
	yes := true
	objectSet := metav1.OwnerReference{APIVersion: "package-operator.run/v1alpha1", Kind: "ObjectSet", Name: "addon-1", Controller: &yes}
	replicaSet := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Controller: &yes}
	flux := map[string]string{fluxNameLabel: "addons", fluxNamespaceLabel: "flux-system"}
	both := []convoyv1alpha1.AdoptOwner{convoyv1alpha1.AdoptFromFlux, convoyv1alpha1.AdoptFromPackageOperator}
	for _, tc := range []struct {
		name   string
		live   *unstructured.Unstructured
		adopt  []convoyv1alpha1.AdoptOwner
		owners string
		takes  bool
	}{
		{"no owner", marked(nil, nil), both, "not managed by convoy", false},
		{"Flux, adopted", marked(flux, nil), both, "managed by Flux Kustomization flux-system/addons", true},
		{"Flux, not named", marked(flux, nil), []convoyv1alpha1.AdoptOwner{convoyv1alpha1.AdoptFromPackageOperator},
			"managed by Flux Kustomization flux-system/addons", false},
		{"Flux without adopt", marked(flux, nil), nil, "managed by Flux Kustomization flux-system/addons", false},
		{"Package Operator's ObjectSet", marked(map[string]string{pkoCacheLabel: "True"}, nil, objectSet), both,
			"managed by Package Operator ObjectSet addon-1", true},
		{"Package Operator across clusters", marked(nil, map[string]string{pkoOwnersAnnotation: "[]"}), both,
			"managed by Package Operator", true},
		{"Flux HelmRelease", marked(map[string]string{fluxHelmNameLabel: "x", fluxHelmNamespaceLabel: "y"}, nil), both,
			"managed by Flux HelmRelease y/x", false},
		{"Helm", marked(map[string]string{managedByLabel: "Helm"}, nil), both, "managed by Helm", false},
		{"Argo CD", marked(map[string]string{argoInstanceLabel: "addons"}, nil), both, "managed by Argo CD application addons", false},
		{"Flux and a controller", marked(flux, nil, replicaSet), both,
			"managed by Flux Kustomization flux-system/addons; owned by ReplicaSet rs", false},
		{"another Package", marked(map[string]string{convoyv1alpha1.PackageNameLabel: "other", convoyv1alpha1.PackageNamespaceLabel: "ns"}, nil),
			both, "managed by Package ns/other", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := &cluster{name: convoyv1alpha1.InventoryClusterManagement, target: &Target{Namespace: "ns", Name: "pkg", AdoptFrom: tc.adopt}}
			claims := c.claimsOn(tc.live)
			g.Expect(describeClaims(claims)).To(Equal(tc.owners))
			g.Expect(c.takesOver(claims)).To(Equal(tc.takes))
		})
	}
}

func TestTakeoverPatchMovesTheMarks(t *testing.T) {
	g := NewWithT(t)
	yes := true
	live := marked(map[string]string{fluxNameLabel: "addons", fluxNamespaceLabel: "flux-system", pkoCacheLabel: "True", "app": "addon"},
		map[string]string{pkoOwnersAnnotation: "[]", pkoRevisionAnnotation: "3"},
		metav1.OwnerReference{APIVersion: "package-operator.run/v1alpha1", Kind: "ObjectSetPhase", Name: "p", Controller: &yes},
		metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keep"})
	live.SetUID("uid-1")
	live.SetResourceVersion("42")
	live.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: fluxFieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:level":{}}}`)},
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:other":{}}}`)},
	})
	c := &cluster{name: convoyv1alpha1.InventoryClusterManagement, target: &Target{Namespace: "ns", Name: "pkg", AdoptFrom: []convoyv1alpha1.AdoptOwner{
		convoyv1alpha1.AdoptFromFlux, convoyv1alpha1.AdoptFromPackageOperator}}}
	claims := c.claimsOn(live)
	g.Expect(c.takesOver(claims)).To(BeTrue())
	ops, err := c.takeoverPatch(live, kubetest.ConfigMap("ns", "cm", nil), claims)
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := json.Marshal(ops)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).To(MatchJSON(`[
		{"op":"test","path":"/metadata/uid","value":"uid-1"},
		{"op":"test","path":"/metadata/resourceVersion","value":"42"},
		{"op":"add","path":"/metadata/labels","value":{"app":"addon","convoy.dev/package-name":"pkg",
			"convoy.dev/package-namespace":"ns","convoy.dev/adopted-from":"flux.package-operator"}},
		{"op":"remove","path":"/metadata/annotations/package-operator.run~1owners"},
		{"op":"replace","path":"/metadata/ownerReferences","value":[{"apiVersion":"v1","kind":"ConfigMap","name":"keep","uid":""}]},
		{"op":"replace","path":"/metadata/managedFields","value":[
			{"manager":"kubectl","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:other":{}}}},
			{"manager":"convoy","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:level":{}}}}]}
	]`))

	taken := live.DeepCopy()
	taken.SetOwnerReferences(nil)
	taken.SetAnnotations(nil)
	taken.SetLabels(map[string]string{convoyv1alpha1.PackageNameLabel: "pkg", convoyv1alpha1.PackageNamespaceLabel: "ns",
		convoyv1alpha1.AdoptedFromLabel: "flux.package-operator"})
	_, contested := c.contestedBy(taken)
	g.Expect(contested).To(BeFalse(), "the marks are gone")
	taken.SetLabels(map[string]string{convoyv1alpha1.AdoptedFromLabel: "flux", fluxNameLabel: "addons", fluxNamespaceLabel: "flux-system"})
	cl, contested := c.contestedBy(taken)
	g.Expect(contested).To(BeTrue(), "Flux applied it again")
	g.Expect(cl.owner).To(Equal("managed by Flux Kustomization flux-system/addons"))
	// Taken over from Flux, then applied by Package Operator, which the owner does not adopt
	// from: a contest too, not a fight on every watch event.
	fluxOnly := &cluster{name: convoyv1alpha1.InventoryClusterManagement,
		target: &Target{Namespace: "ns", Name: "pkg", AdoptFrom: []convoyv1alpha1.AdoptOwner{convoyv1alpha1.AdoptFromFlux}}}
	taken.SetLabels(map[string]string{convoyv1alpha1.AdoptedFromLabel: "flux", pkoCacheLabel: "pkg"})
	_, contested = fluxOnly.contestedBy(taken)
	g.Expect(contested).To(BeTrue(), "another tool began to apply an object convoy took over")

	// An object convoy created, which Flux began to apply: a contest for an owner that does
	// not adopt from Flux, a takeover for one that does.
	plain := &cluster{name: convoyv1alpha1.InventoryClusterManagement, target: &Target{Namespace: "ns", Name: "pkg"}}
	created := kubetest.ConfigMap("ns", "cm", nil)
	created.SetLabels(map[string]string{convoyv1alpha1.PackageNameLabel: "pkg", convoyv1alpha1.PackageNamespaceLabel: "ns"})
	_, contested = plain.contestedBy(created)
	g.Expect(contested).To(BeFalse(), "convoy's own object, no other marks")
	created.SetLabels(map[string]string{convoyv1alpha1.PackageNameLabel: "pkg", convoyv1alpha1.PackageNamespaceLabel: "ns",
		fluxNameLabel: "addons", fluxNamespaceLabel: "flux-system"})
	cl, contested = plain.contestedBy(created)
	g.Expect(contested).To(BeTrue(), "Flux began to apply an object convoy created")
	g.Expect(cl.owner).To(Equal("managed by Flux Kustomization flux-system/addons"))
	_, contested = c.contestedBy(created)
	g.Expect(contested).To(BeFalse(), "taken over again by an owner that adopts from Flux")
	other := created.DeepCopy()
	other.SetLabels(map[string]string{convoyv1alpha1.PackageNameLabel: "other", convoyv1alpha1.PackageNamespaceLabel: "ns",
		fluxNameLabel: "addons", fluxNamespaceLabel: "flux-system"})
	_, contested = plain.contestedBy(other)
	g.Expect(contested).To(BeFalse(), "another owner's object is a collision, not a contest")
}
