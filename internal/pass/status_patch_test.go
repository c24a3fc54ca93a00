package pass

import (
	"encoding/json"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// unstructuredStatusPatch is how statusPatch decided before it encoded the typed status: the
// whole object converted to unstructured, the statuses compared as maps.
func unstructuredStatusPatch(before, after runtime.Object) ([]byte, bool, error) {
	status := func(obj runtime.Object) any {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			panic(err)
		}
		return u["status"]
	}
	b, a := status(before), status(after)
	if equality.Semantic.DeepEqual(b, a) {
		return nil, false, nil
	}
	bj, _ := json.Marshal(map[string]any{"status": b})
	aj, _ := json.Marshal(map[string]any{"status": a})
	data, err := jsonpatch.CreateMergePatch(bj, aj)
	return data, err == nil, err
}

// TestStatusPatchDecidesAsTheUnstructuredComparison holds statusPatch to the decision and the
// patch of the comparison of unstructured statuses, for the statuses of every kind a pass
// patches: zero and set times, counters without omitempty, nil and empty lists, pointers.
func TestStatusPatchDecidesAsTheUnstructuredComparison(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC))
	later := metav1.NewTime(at.Add(time.Hour))
	gitSource := func(mutate func(*convoyv1alpha1.GitSourceStatus)) runtime.Object {
		gs := &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Name: "gs"}}
		mutate(&gs.Status)
		return gs
	}
	rollout := func(mutate func(*convoyv1alpha1.HostedClusterPackageStatus)) runtime.Object {
		h := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "h"}}
		mutate(&h.Status)
		return h
	}
	pkg := func(mutate func(*convoyv1alpha1.Package)) runtime.Object {
		p := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		mutate(p)
		return p
	}
	same := func(*convoyv1alpha1.GitSourceStatus) {}
	for name, tc := range map[string][2]runtime.Object{
		"an artifact with a zero time": {gitSource(same), gitSource(func(s *convoyv1alpha1.GitSourceStatus) {
			s.Artifact = &convoyv1alpha1.Artifact{Revision: "main@sha1:abc", Commit: "abc"}
		})},
		"an artifact's time set": {gitSource(func(s *convoyv1alpha1.GitSourceStatus) {
			s.Artifact = &convoyv1alpha1.Artifact{Revision: "main@sha1:abc", Commit: "abc"}
		}), gitSource(func(s *convoyv1alpha1.GitSourceStatus) {
			s.Artifact = &convoyv1alpha1.Artifact{Revision: "main@sha1:abc", Commit: "abc", LastUpdateTime: at}
		})},
		"an artifact removed": {gitSource(func(s *convoyv1alpha1.GitSourceStatus) {
			s.Artifact = &convoyv1alpha1.Artifact{Revision: "main@sha1:abc", Commit: "abc", LastUpdateTime: at}
		}), gitSource(same)},
		"counters back to zero": {rollout(func(s *convoyv1alpha1.HostedClusterPackageStatus) {
			s.TotalPackages, s.UpdatedPackages, s.PendingDeletions = 3, 2, 1
		}), rollout(func(*convoyv1alpha1.HostedClusterPackageStatus) {})},
		"a gate's deadline moved": {rollout(func(s *convoyv1alpha1.HostedClusterPackageStatus) {
			s.Gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateSoak, Until: &at}
		}), rollout(func(s *convoyv1alpha1.HostedClusterPackageStatus) {
			s.Gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateSoak, Until: &later}
		})},
		"a gate's deadline cleared": {rollout(func(s *convoyv1alpha1.HostedClusterPackageStatus) {
			s.Gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateSoak, Until: &at}
		}), rollout(func(s *convoyv1alpha1.HostedClusterPackageStatus) {
			s.Gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateSoak}
		})},
		"partitions emptied": {rollout(func(s *convoyv1alpha1.HostedClusterPackageStatus) {
			s.Partitions = []convoyv1alpha1.PartitionStatus{{Name: "canary", Total: 1, State: "Complete", Until: &at}}
		}), rollout(func(s *convoyv1alpha1.HostedClusterPackageStatus) { s.Partitions = []convoyv1alpha1.PartitionStatus{} })},
		"an inventory replaced": {pkg(func(p *convoyv1alpha1.Package) {
			p.Status.Inventory = []convoyv1alpha1.InventoryEntry{{ID: "ns_a__ConfigMap", Version: "v1", Cluster: "management"}}
		}), pkg(func(p *convoyv1alpha1.Package) {
			p.Status.Inventory = []convoyv1alpha1.InventoryEntry{{ID: "ns_b__ConfigMap", Version: "v1", Cluster: "management", Phase: "deploy"}}
		})},
		"only the spec changed": {pkg(func(p *convoyv1alpha1.Package) { p.Spec.Revision = "a" }), pkg(func(p *convoyv1alpha1.Package) { p.Spec.Revision = "b" })},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			wantData, wantChanged, err := unstructuredStatusPatch(tc[0], tc[1])
			g.Expect(err).NotTo(HaveOccurred())
			data, changed, err := statusPatch(tc[0], tc[1])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(changed).To(Equal(wantChanged))
			if wantChanged {
				g.Expect(data).To(MatchJSON(wantData))
			}
		})
	}
}
