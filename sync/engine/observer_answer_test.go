package engine

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests/probe"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// TestAnApplyKeepsTheBodyOnlyWhereTheJudgeReadsIt: against a real API server, the apply of a
// kind kstatus judges by its metadata keeps the answer's metadata only (a Secret's data is not
// held), judged available as before; a probe that selects such an object gets its whole body and
// judges it by it; a kind with a status keeps its body. No live state keeps managedFields.
func TestAnApplyKeepsTheBodyOnlyWhereTheJudgeReadsIt(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := fleet.NewNamespaceIn(t, env.Client)
	rules, errs := probe.Compile([]convoyv1alpha1.ObjectSetProbe{{
		Selector: convoyv1alpha1.ProbeSelector{Kind: convoyv1alpha1.GroupKindSelector{Kind: "ConfigMap"},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"probed": "true"}}},
		Probes: []convoyv1alpha1.Probe{{CEL: &convoyv1alpha1.CELProbe{Rule: "self.data.ready == 'yes'", Message: "not ready"}}},
	}}, field.NewPath("probes"))
	g.Expect(errs).To(BeEmpty())
	obs := newObserver(env.Client, rules)
	apply := func(obj *unstructured.Unstructured) *unstructured.Unstructured {
		live, err := obs.applyOwned(ctx, obj, client.ForceOwnership, client.FieldOwner(FieldManager))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(live.GetManagedFields()).To(BeEmpty())
		g.Expect(live.GetResourceVersion()).NotTo(BeEmpty())
		g.Expect(live.GetUID()).NotTo(BeEmpty())
		g.Expect(obs.live(obj)).To(BeIdenticalTo(live))
		return live
	}

	secret := kubetest.Object("v1", "Secret", ns, "token", map[string]any{"stringData": map[string]any{"token": "s3cr3t"}})
	secret.SetLabels(map[string]string{"team": "a"})
	live := apply(secret)
	g.Expect(live.Object).To(HaveKey("metadata"))
	g.Expect(live.Object).NotTo(HaveKey("data"), "a Secret's data is not kept")
	g.Expect(live.GetLabels()).To(Equal(map[string]string{"team": "a"}))
	g.Expect(live.GetKind()).To(Equal("Secret"))
	g.Expect(probe.Evaluate(rules, live)).To(BeTrue())

	plain := apply(kubetest.ConfigMap(ns, "plain", map[string]string{"ready": "no"}))
	g.Expect(plain.Object).NotTo(HaveKey("data"))
	g.Expect(probe.Evaluate(rules, plain)).To(BeTrue(), "no probe selects it: kstatus finds it Current")

	probed := kubetest.ConfigMap(ns, "probed", map[string]string{"ready": "no"})
	probed.SetLabels(map[string]string{"probed": "true"})
	live = apply(probed)
	g.Expect(live.Object).To(HaveKeyWithValue("data", HaveKeyWithValue("ready", "no")))
	ok, msg := probe.Evaluate(rules, live)
	g.Expect(ok).To(BeFalse())
	g.Expect(msg).To(ContainSubstring("not ready"))

	// A label another writer left on the live object makes a probe select it: its body is read.
	labelled := kubetest.ConfigMap(ns, "labelled", map[string]string{"ready": "no"})
	g.Expect(env.Client.Create(ctx, labelled.DeepCopy())).To(Succeed())
	g.Expect(env.Client.Patch(ctx, labelled.DeepCopy(), client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"probed":"true"}}}`)))).To(Succeed())
	live = apply(kubetest.ConfigMap(ns, "labelled", map[string]string{"ready": "no"}))
	g.Expect(live.GetLabels()).To(HaveKeyWithValue("probed", "true"))
	g.Expect(live.Object).To(HaveKeyWithValue("data", HaveKeyWithValue("ready", "no")))
	ok, _ = probe.Evaluate(rules, live)
	g.Expect(ok).To(BeFalse(), "judged by its body")

	svc := kubetest.Object("v1", "Service", ns, "web", map[string]any{"spec": map[string]any{
		"ports": []any{map[string]any{"port": int64(80)}}}})
	g.Expect(apply(svc).Object).To(HaveKey("spec"), "a kind judged by its body keeps it")
}

// TestJudgedByMetadata: the kinds without a status are judged by their metadata unless a probe
// selects the object.
func TestJudgedByMetadata(t *testing.T) {
	g := NewWithT(t)
	rules, errs := probe.Compile([]convoyv1alpha1.ObjectSetProbe{{
		Selector: convoyv1alpha1.ProbeSelector{Kind: convoyv1alpha1.GroupKindSelector{Group: "rbac.authorization.k8s.io", Kind: "Role"}},
		Probes:   []convoyv1alpha1.Probe{{CEL: &convoyv1alpha1.CELProbe{Rule: "true", Message: "never"}}},
	}}, field.NewPath("probes"))
	g.Expect(errs).To(BeEmpty())
	for _, tc := range []struct {
		apiVersion, kind string
		want             bool
	}{
		{"v1", "ConfigMap", true},
		{"v1", "Secret", true},
		{"v1", "ServiceAccount", true},
		{"rbac.authorization.k8s.io/v1", "RoleBinding", true},
		{"rbac.authorization.k8s.io/v1", "ClusterRole", true},
		{"rbac.authorization.k8s.io/v1", "Role", false},
		{"apps/v1", "Deployment", false},
		{"v1", "Service", false},
		{"example.com/v1", "ConfigMap", false},
	} {
		obj := kubetest.Object(tc.apiVersion, tc.kind, "ns", "x", nil)
		g.Expect(judgedByMetadata(obj, rules)).To(Equal(tc.want), "%s %s", tc.apiVersion, tc.kind)
	}
}
