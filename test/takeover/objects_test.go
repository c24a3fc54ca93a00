package takeover

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// within bounds each wait of the story: Flux and convoy poll every 2 seconds.
const within = 2 * time.Minute

// snapshot is what must not change of one object across the move.
type snapshot struct {
	uid        types.UID
	generation int64
	template   any
}

// addonObjects returns the add-on's objects in one HCP namespace, as empty shells to read.
func addonObjects(hcp string) []*unstructured.Unstructured {
	d := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}
	d.SetNamespace(hcp)
	d.SetName("addon")
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	cm.SetNamespace(hcp)
	cm.SetName("addon-settings")
	return []*unstructured.Unstructured{d, cm}
}

// read reads every add-on object of the story.
func (s *story) read(g Gomega) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, hcp := range s.hcps {
		for _, obj := range addonObjects(hcp) {
			g.Expect(s.env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			out[obj.GetKind()+"/"+hcp] = obj
		}
	}
	return out
}

// expectFluxApplied waits until Flux applied the add-on into every HCP namespace and returns
// what the move must keep.
func (s *story) expectFluxApplied(t *testing.T) map[string]snapshot {
	t.Helper()
	var objs map[string]*unstructured.Unstructured
	NewWithT(t).Eventually(func(g Gomega) {
		objs = s.read(g)
		for _, o := range objs {
			g.Expect(o.GetLabels()).To(HaveKey(fluxName))
		}
	}).WithTimeout(within).Should(Succeed(), func() string { return s.flux.Log("kustomize-controller", 20) })
	out := map[string]snapshot{}
	for k, o := range objs {
		tmpl, _, _ := unstructured.NestedMap(o.Object, "spec", "template")
		out[k] = snapshot{uid: o.GetUID(), generation: o.GetGeneration(), template: tmpl}
	}
	return out
}

// expectTakenOver checks every object after the takeover: the same UID, generation and pod
// template as Flux left them, Flux's labels gone, convoy's there.
func (s *story) expectTakenOver(t *testing.T, before map[string]snapshot) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		for k, o := range s.read(g) {
			g.Expect(o.GetLabels()).NotTo(HaveKey(fluxName), k)
			g.Expect(o.GetLabels()).NotTo(HaveKey(fluxNamespace), k)
			g.Expect(o.GetLabels()).To(HaveKeyWithValue(convoyv1alpha1.AdoptedFromLabel, "flux"), k)
			g.Expect(o.GetLabels()).To(HaveKey(convoyv1alpha1.PackageNameLabel), k)
			for _, m := range o.GetManagedFields() {
				g.Expect(m.Manager).NotTo(Equal("kustomize-controller"), k)
			}
			tmpl, _, _ := unstructured.NestedMap(o.Object, "spec", "template")
			g.Expect(o.GetUID()).To(Equal(before[k].uid), k)
			g.Expect(o.GetGeneration()).To(Equal(before[k].generation), "%s: no spec written, no new ReplicaSet", k)
			g.Expect(tmpl).To(Equal(before[k].template), k)
		}
	}).WithTimeout(within).Should(Succeed())
}

// expectSameObjects checks that no object was re-created.
func (s *story) expectSameObjects(t *testing.T, before map[string]snapshot) {
	t.Helper()
	g := NewWithT(t)
	for k, o := range s.read(g) {
		g.Expect(o.GetUID()).To(Equal(before[k].uid), k)
	}
}

// expectImage waits until every Deployment runs image and, when available is set, its
// Package is Available.
func (s *story) expectImage(t *testing.T, image string, available bool) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		for k, o := range s.read(g) {
			if o.GetKind() != "Deployment" {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			g.Expect(containers).To(HaveLen(1), k)
			g.Expect(containers[0]).To(HaveKeyWithValue("image", image), k)
		}
		for _, hcp := range s.hcps {
			list := &convoyv1alpha1.PackageList{}
			g.Expect(s.env.Client.List(context.Background(), list, client.InNamespace(hcp))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			g.Expect(list.Items[0].Spec.Adopt).NotTo(BeNil(), "the HostedClusterPackage passes spec.adopt on")
			if available {
				g.Expect(condition(list.Items[0].Status.Conditions, convoyv1alpha1.AvailableCondition)).To(Equal("True"), hcp)
			}
		}
	}).WithTimeout(within).Should(Succeed(), func() string { return s.ctrl.LogPath() })
}

// expectPartitionByPartition waits until the Deployment of every HCP namespace is what done
// says, reading them every 100 ms, and expects each tier's to become so the soak after the
// tier before's (less the second a condition's time rounds off, and the reads' interval): the
// move and the rollouts after it go partition by partition.
func (s *story) expectPartitionByPartition(t *testing.T, what string, done func(*unstructured.Unstructured) bool) {
	t.Helper()
	g := NewWithT(t)
	at := map[string]time.Time{}
	deadline := time.Now().Add(within)
	for len(at) < len(s.hcps) {
		g.Expect(time.Now().Before(deadline)).To(BeTrue(), "not every Deployment %s after %s: %v", what, within, at)
		for _, hcp := range s.hcps {
			d := addonObjects(hcp)[0]
			g.Expect(s.env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), d)).To(Succeed())
			if _, seen := at[hcp]; !seen && done(d) {
				at[hcp] = time.Now()
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := 1; i < len(s.hcps); i++ {
		after := at[s.hcps[i]].Sub(at[s.hcps[i-1]])
		t.Logf("the Deployment of tier %s %s %s after tier %s's", tiers[i], what, after.Round(10*time.Millisecond), tiers[i-1])
		g.Expect(after).To(BeNumerically(">=", soak-1500*time.Millisecond), "tier %s's Deployment %s before tier %s's soak ended", tiers[i], what, tiers[i-1])
	}
}

// hasImage reports a Deployment whose one container runs image.
func hasImage(image string) func(*unstructured.Unstructured) bool {
	return func(d *unstructured.Unstructured) bool {
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		if len(containers) != 1 {
			return false
		}
		c, ok := containers[0].(map[string]any)
		return ok && c["image"] == image
	}
}

// expectContested waits until a Package reports that Flux applies its objects again.
func (s *story) expectContested(t *testing.T) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		contested := 0
		for _, hcp := range s.hcps {
			list := &convoyv1alpha1.PackageList{}
			g.Expect(s.env.Client.List(context.Background(), list, client.InNamespace(hcp))).To(Succeed())
			for _, c := range list.Items[0].Status.Conditions {
				if c.Reason == convoyv1alpha1.TakeoverContestedReason {
					g.Expect(c.Message).To(ContainSubstring("managed by Flux Kustomization " + s.ns + "/addon-" + hcp))
					contested++
					break
				}
			}
		}
		g.Expect(contested).To(Equal(len(s.hcps)))
	}).WithTimeout(within).Should(Succeed())
	// Neither side writes in a loop: convoy stopped, Flux finds nothing drifted once it
	// corrected what convoy wrote before it saw the contest.
	versions := func(g Gomega) map[string]string {
		out := map[string]string{}
		for k, o := range s.read(g) {
			out[k] = o.GetResourceVersion()
		}
		return out
	}
	g := NewWithT(t)
	// Flux, resumed, corrects at its next interval (2 s) what convoy's one write back changed
	// before it saw the contest: the objects settle within a few intervals, then stay.
	var settled map[string]string
	g.Eventually(func(g Gomega) {
		settled = versions(g)
		time.Sleep(3 * time.Second)
		g.Expect(versions(g)).To(Equal(settled))
	}).WithTimeout(within).Should(Succeed())
	g.Consistently(versions).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Equal(settled))
}

// condition returns the status of the condition of type kind.
func condition(conds []metav1.Condition, kind string) string {
	for _, c := range conds {
		if c.Type == kind {
			return string(c.Status)
		}
	}
	return ""
}

// mustJSON encodes v.
func mustJSON(g Gomega, v any) string {
	raw, err := json.Marshal(v)
	g.Expect(err).NotTo(HaveOccurred())
	return string(raw)
}

// takeBack takes the guide's way back from a contest, Flux suspended: the label
// convoy.dev/adopted-from removed from every object that carries Flux's marks again, then waits
// until convoy took each over again (Flux's labels gone, the label back) and no Package is
// stalled. The label goes again from an object Flux marked once more: a reconcile of Flux's
// that began before the suspension may still apply after the label was removed.
func (s *story) takeBack(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	patch := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/labels/convoy.dev~1adopted-from"}]`))
	NewWithT(t).Eventually(func(g Gomega) {
		for k, o := range s.read(g) {
			if _, adopted := o.GetLabels()[convoyv1alpha1.AdoptedFromLabel]; adopted && o.GetLabels()[fluxName] != "" {
				g.Expect(s.env.Client.Patch(ctx, o, patch)).To(Succeed(), k)
			}
		}
		for k, o := range s.read(g) {
			g.Expect(o.GetLabels()).NotTo(HaveKey(fluxName), k)
			g.Expect(o.GetLabels()).To(HaveKeyWithValue(convoyv1alpha1.AdoptedFromLabel, "flux"), k)
		}
		for _, hcp := range s.hcps {
			list := &convoyv1alpha1.PackageList{}
			g.Expect(s.env.Client.List(ctx, list, client.InNamespace(hcp))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			g.Expect(condition(list.Items[0].Status.Conditions, convoyv1alpha1.StalledCondition)).NotTo(Equal("True"), hcp)
		}
	}).WithTimeout(within).WithPolling(time.Second).Should(Succeed(), func() string { return s.ctrl.LogPath() })
}
