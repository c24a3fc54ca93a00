package engine

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// TestSyncInstallsWithOneRequestPerObject counts the requests of an install on real API
// servers: one apply per object, no read, in the management and the hosted cluster; and an
// update after a restart (a new engine, the objects in the inventory) still reads first.
func TestSyncInstallsWithOneRequestPerObject(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt, mgmtCount := countedTarget(t)
	hosted, hostedCount := countingClient(t, blue.Config)
	tgt.Hosted = hosted
	suffix := fleet.NameSuffix()
	var mgmtObjs, hostedObjs []*unstructured.Unstructured
	for i := range 10 {
		mgmtObjs = append(mgmtObjs, kubetest.ConfigMap("", fmt.Sprintf("m-%d", i), map[string]string{"v": "1"}))
		hostedObjs = append(hostedObjs, kubetest.ConfigMap("default", fmt.Sprintf("h-%s-%d", suffix, i), map[string]string{"v": "1"}))
	}
	rev := &Revision{ID: "r1", Phases: []Phase{
		{Name: "mgmt", Objects: mgmtObjs},
		{Name: "hosted", Class: convoyv1alpha1.ClassHostedCluster, Objects: hostedObjs},
	}}
	mgmtCount.take()
	hostedCount.take()
	res, err := memoryEngine(Options{Controller: "test"}, nil, nil).Sync(ctx, tgt, rev, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changes).To(Equal(Changes{Created: 20}))
	g.Expect(mgmtCount.takeWithoutDiscovery()).To(Equal(map[string]int{"PATCH": 10}), "management: one apply per object")
	// The hosted phase lists its kinds once to learn what is quiet (sync/engine/memory).
	hostedCounts := hostedCount.takeWithoutDiscovery()
	g.Expect(hostedCounts).To(HaveKeyWithValue("PATCH", 10), "hosted: one apply per object")
	g.Expect(hostedCounts).NotTo(HaveKey("GET"), "hosted: no read of an object")

	_, err = memoryEngine(Options{Controller: "test"}, nil, nil).Sync(ctx, tgt, rev, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgmtCount.takeWithoutDiscovery()).To(HaveKeyWithValue("GET", 10), "after a restart, inventoried objects are read")
}

// TestSyncRefusesACollisionNothingKnewOf creates an object of another Package a moment before
// an install whose engine knows nothing of it: the create-only apply finds it, the install
// stalls on the collision, leaves it as it was and deletes what it created.
func TestSyncRefusesACollisionNothingKnewOf(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	tgt := engineTarget(t)
	other := *tgt
	other.Name = "other"
	theirs := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
		kubetest.ConfigMap("", "shared", map[string]string{"v": "theirs"})}}}}
	_, err := memoryEngine(Options{Controller: "other"}, nil, nil).Sync(ctx, &other, theirs, nil)
	g.Expect(err).NotTo(HaveOccurred())

	mine := &Revision{ID: "r1", Phases: []Phase{{Name: "one", Objects: []*unstructured.Unstructured{
		kubetest.ConfigMap("", "a-mine", nil), kubetest.ConfigMap("", "shared", map[string]string{"v": "mine"})}}}}
	res, err := memoryEngine(Options{Controller: "test"}, nil, nil).Sync(ctx, tgt, mine, nil)
	g.Expect(reasonOf(err)).To(Equal(convoyv1alpha1.CollisionReason), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("(managed by Package " + tgt.Namespace + "/other)"))
	live := kubetest.Get(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "shared", nil))
	g.Expect(live.Object["data"]).To(HaveKeyWithValue("v", "theirs"), "the other Package's object is not written")
	g.Expect(live.GetLabels()).To(HaveKeyWithValue(convoyv1alpha1.PackageNameLabel, "other"))
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(tgt.Namespace, "a-mine", nil))).To(BeFalse(), "what the install created is deleted")
	g.Expect(res.Inventory).To(BeEmpty())
	g.Expect(res.Changes.Created).To(BeZero())
}
