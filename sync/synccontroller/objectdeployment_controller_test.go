package synccontroller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// objectDeployment returns an ObjectDeployment with a hosted phase and a gated management
// phase.
func objectDeployment(g Gomega, ns, hostedNS, value string) *convoyv1alpha1.ObjectDeployment {
	return &convoyv1alpha1.ObjectDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "od"},
		Spec: convoyv1alpha1.ObjectDeploymentSpec{Template: convoyv1alpha1.ObjectSetTemplate{
			Spec: convoyv1alpha1.ObjectSetTemplateSpec{
				Phases: []convoyv1alpha1.ObjectSetPhase{
					{Name: "hosted", Class: convoyv1alpha1.ClassHostedCluster, Objects: []convoyv1alpha1.ObjectSetObject{
						raw(g, kubetest.ConfigMap(hostedNS, "inside", map[string]string{"v": value}))}},
					{Name: "management", Objects: []convoyv1alpha1.ObjectSetObject{
						raw(g, kubetest.ConfigMap("", "outside", map[string]string{"v": value})), raw(g, kubetest.Gate("", "gate"))}},
				},
				AvailabilityProbes: []convoyv1alpha1.ObjectSetProbe{kubetest.GateProbe()},
			},
		}},
	}
}

func TestObjectDeploymentLifecycle(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := hcpNamespace(t, blue)
	hostedNS := fleet.NewNamespaceIn(t, blue.Client)
	od := objectDeployment(g, ns, hostedNS, "1")
	g.Expect(env.Client.Create(ctx, od)).To(Succeed())
	key := client.ObjectKeyFromObject(od)

	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, od)).To(Succeed())
		g.Expect(od.Status.Conditions).To(haveCondition(convoyv1alpha1.AvailableCondition, metav1.ConditionFalse, "the gate is closed"))
		g.Expect(od.Status.Conditions).To(haveCondition(convoyv1alpha1.ProgressingCondition, metav1.ConditionTrue, ""))
		g.Expect(kstatusOf(g, od)).To(Equal(status.InProgressStatus))
	}).Should(Succeed())
	g.Expect(od.Finalizers).To(ContainElement(convoyv1alpha1.Finalizer))
	g.Expect(od.Status.Revision).To(BeEmpty())
	g.Expect(od.Status.Phases).To(HaveLen(2))
	g.Expect(od.Status.Phases[0].Available).To(BeTrue())
	g.Expect(kubetest.Exists(g, blue.Client, kubetest.ConfigMap(hostedNS, "inside", nil))).To(BeTrue())

	kubetest.OpenGate(g, env.Client, ns, "gate")
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, od)).To(Succeed())
		g.Expect(od.Status.Conditions).To(haveCondition(convoyv1alpha1.AvailableCondition, metav1.ConditionTrue, ""))
		g.Expect(od.Status.Conditions).To(haveCondition(convoyv1alpha1.ProgressingCondition, metav1.ConditionFalse, ""))
		g.Expect(od.Status.Conditions).To(haveCondition(convoyv1alpha1.PausedCondition, metav1.ConditionFalse, ""))
		g.Expect(kstatusOf(g, od)).To(Equal(status.CurrentStatus))
	}).Should(Succeed())
	first := od.Status.Revision
	g.Expect(first).To(HaveLen(16))
	g.Expect(od.Status.LastAttemptedRevision).To(Equal(first))
	g.Expect(od.Status.Inventory).To(HaveLen(3))

	updated := objectDeployment(g, ns, hostedNS, "2")
	od.Spec = updated.Spec
	g.Expect(env.Client.Update(ctx, od)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key, od)).To(Succeed())
		g.Expect(od.Status.Revision).NotTo(Equal(first))
		g.Expect(kstatusOf(g, od)).To(Equal(status.CurrentStatus))
		live := kubetest.Get(g, blue.Client, kubetest.ConfigMap(hostedNS, "inside", nil))
		g.Expect(live.Object["data"]).To(Equal(map[string]any{"v": "2"}))
	}).Should(Succeed())

	g.Expect(env.Client.Delete(ctx, od)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(kubetest.Exists(g, env.Client, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "convoy.dev/v1alpha1", "kind": "ObjectDeployment",
			"metadata": map[string]any{"namespace": ns, "name": "od"}}})).To(BeFalse())
	}).Should(Succeed())
	g.Expect(kubetest.Exists(g, blue.Client, kubetest.ConfigMap(hostedNS, "inside", nil))).To(BeFalse())
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(ns, "outside", nil))).To(BeFalse())
}

func TestObjectDeploymentInvalidTemplateStalls(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := fleet.NewNamespaceIn(t, env.Client)
	od := &convoyv1alpha1.ObjectDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
		Spec: convoyv1alpha1.ObjectDeploymentSpec{Template: convoyv1alpha1.ObjectSetTemplate{
			Spec: convoyv1alpha1.ObjectSetTemplateSpec{Phases: []convoyv1alpha1.ObjectSetPhase{
				{Name: "one", Objects: []convoyv1alpha1.ObjectSetObject{
					raw(g, kubetest.ConfigMap("", "dup", nil)), raw(g, kubetest.ConfigMap("", "dup", nil))}},
			}},
		}},
	}
	g.Expect(env.Client.Create(ctx, od)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(od), od)).To(Succeed())
		g.Expect(od.Status.Conditions).To(haveCondition(convoyv1alpha1.StalledCondition, metav1.ConditionTrue, "dup"))
		g.Expect(conditionOf(od.Status.Conditions, convoyv1alpha1.ReadyCondition).Reason).To(Equal(convoyv1alpha1.RenderFailedReason))
		g.Expect(kstatusOf(g, od)).To(Equal(status.FailedStatus))
	}).Should(Succeed())
}

func TestObjectDeploymentExamples(t *testing.T) {
	env.Require(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "objectdeployments", "*.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(files).NotTo(BeEmpty())
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			data, err := os.ReadFile(file)
			g.Expect(err).NotTo(HaveOccurred())
			od := &convoyv1alpha1.ObjectDeployment{}
			g.Expect(yaml.UnmarshalStrict(data, od)).To(Succeed())
			od.Namespace = hcpNamespace(t, blue)
			g.Expect(env.Client.Create(ctx, od)).To(Succeed())
			g.Eventually(func(g Gomega) {
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(od), od)).To(Succeed())
				g.Expect(od.Status.Conditions).To(haveCondition(convoyv1alpha1.ReadyCondition, metav1.ConditionTrue, ""))
				g.Expect(od.Status.Conditions).To(haveCondition(convoyv1alpha1.AvailableCondition, metav1.ConditionTrue, ""))
			}).Should(Succeed())
		})
	}
}

// A store that could not read a commit is retried with backoff, never a stall: the commit's
// content is not at fault.
func TestRenderErrorRetriesStoreReadsAndStallsInvalidContent(t *testing.T) {
	g := NewWithT(t)
	storeErr := fmt.Errorf("reading the package directory %q: %w", "pkg",
		&sources.StoreReadError{Key: sources.KeyFor("ns", "src"), Commit: "c", Err: errors.New("packfile not found")})
	var generic *pass.Generic
	g.Expect(errors.As(renderError(storeErr), &generic)).To(BeTrue())
	g.Expect(generic.Reason).To(Equal(sources.StoreReadFailedReason))
	var stalled *pass.Stalling
	invalid := manifests.Errors{{File: "a.yaml", Rule: manifests.RuleInvalidYAML, Message: "bad"}}
	g.Expect(errors.As(renderError(invalid), &stalled)).To(BeTrue())
	g.Expect(stalled.Reason).To(Equal(convoyv1alpha1.RenderFailedReason))
}
