package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// tinyFleetRun is a fleet run of addons add-ons (the last hosted) over namespaces, without
// servers: what the floors' plans and the rows are computed from.
func tinyFleetRun(addons int, namespaces ...string) *fleetRun {
	e := &env{namespaces: map[string]bool{}, sample: namespaces[:1]}
	for _, ns := range namespaces {
		e.namespaces[ns] = true
	}
	return &fleetRun{e: e, res: &Results{}, addons: newFleetAddons(addons, 1)}
}

// TestFleetFloorsTakeThePackagesInOneOrder checks that the bookkeeping floor writes, for each
// batch of the bare loop and in its order, one Package of the same namespace with the same
// objects under their own names, and leaves out the hosted add-ons.
func TestFleetFloorsTakeThePackagesInOneOrder(t *testing.T) {
	g := NewWithT(t)
	f := tinyFleetRun(3, "ns-c", "ns-a", "ns-b")
	bare, kept := f.bareBatches(1), f.keptPackages()
	g.Expect(kept).To(HaveLen(6), "3 namespaces × the 2 management add-ons")
	g.Expect(bare).To(HaveLen(len(kept)))
	names := map[string]bool{}
	for i, p := range kept {
		names[p.namespace+"/"+p.name] = true
		g.Expect(p.namespace).To(Equal(bare[i][0].GetNamespace()), "Package %d", i)
		objs := managementObjectsOf(p.namespace, p.prefix, 1, p.objects)
		g.Expect(objs).To(HaveLen(len(bare[i])))
		for j, o := range objs {
			g.Expect(o.GetName()).To(Equal(bookkeepingPrefix+strings.TrimPrefix(bare[i][j].GetName(), "bare-")), "Package %d object %d", i, j)
		}
	}
	g.Expect(names).To(HaveLen(len(kept)), "every Package has its own name")
	g.Expect(kept[0]).To(Equal(keptPackage{namespace: "ns-a", name: "keep-addon-00", prefix: "keep-a00-", objects: objectsPerPackage}))
	g.Expect(kept[1].name).To(Equal("keep-addon-01"))
	g.Expect(kept[2].namespace).To(Equal("ns-b"))
}

// TestFleetBookkeepingRowsJudgeTheWallTime checks the rows against the bookkeeping floor: none
// without the floor, per management object, and the 1.3× target on the wall time.
func TestFleetBookkeepingRowsJudgeTheWallTime(t *testing.T) {
	g := NewWithT(t)
	f := tinyFleetRun(3, "ns-a", "ns-b")
	w := window{wall: 13 * time.Second, serverCPU: 400 * time.Millisecond, requests: Requests{"APPLY": 40, "APPLY/packages": 6}}
	f.addBookkeepingRows("install", w, floorPass{})
	g.Expect(f.res.Rows).To(BeEmpty(), "no floor, no rows")

	pass := floorPass{wall: 10 * time.Second, serverCPU: 200 * time.Millisecond, requests: Requests{"APPLY": 40, "APPLY/packages": 4}}
	f.addBookkeepingRows("install", w, pass)
	g.Expect(f.res.Rows).To(HaveLen(3))
	wall, perObj, cpu := f.res.Rows[0], f.res.Rows[1], f.res.Rows[2]
	g.Expect(wall.Target).To(Equal("≤ 1.3×"))
	g.Expect(*wall.Met).To(BeTrue(), "13 s against 10 s")
	g.Expect(wall.Note).To(Equal("5 Packages; the floor has the 4 of the management add-ons"))
	g.Expect(perObj.Value).To(BeNumerically("~", 46.0/40))
	g.Expect(*perObj.Baseline).To(BeNumerically("~", 44.0/40))
	g.Expect(cpu.Value).To(BeNumerically("~", 10.0))
	g.Expect(*cpu.Baseline).To(BeNumerically("~", 5.0))

	f.res.Rows = nil
	w.wall = 13100 * time.Millisecond
	f.addBookkeepingRows("install", w, pass)
	g.Expect(*f.res.Rows[0].Met).To(BeFalse(), "13.1 s against 10 s")
}

// TestFleetBookkeepingFloorLeavesNoPackage runs the fleet's floors on a real API server with 3
// HostedClusters and 3 add-ons (one hosted): each pass of the bookkeeping floor writes every
// management add-on's pin, objects and status once, and the floor's Packages are gone before the
// controller would start, while its objects stay at the update's revision.
func TestFleetBookkeepingFloorLeavesNoPackage(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	ctx := context.Background()
	e, err := newEnv(ctx, Config{Concurrency: 4, WorkDir: t.TempDir()}, envInput{Clusters: 3})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = e.close() }()
	f := &fleetRun{e: e, res: &Results{}, addons: newFleetAddons(3, 1)}
	g.Expect(f.measureFloor(ctx)).To(Succeed())

	for name, pass := range map[string]floorPass{"create": f.keep.create, "update": f.keep.update} {
		g.Expect(pass.wall).To(BeNumerically(">", 0), name)
		g.Expect(pass.serverCPU).To(BeNumerically(">", 0), name)
		g.Expect(pass.requests).To(HaveKeyWithValue("APPLY", 60.0), "%s: 3 namespaces × 2 management add-ons × 10 objects", name)
		g.Expect(pass.requests).To(HaveKeyWithValue("APPLY/packages", 6.0), name)
		g.Expect(pass.requests).To(HaveKeyWithValue("PATCH/packages/status", 6.0), name)
	}
	var pkgs convoyv1alpha1.PackageList
	g.Expect(e.admin.List(ctx, &pkgs)).To(Succeed())
	g.Expect(pkgs.Items).To(BeEmpty(), "the floor deletes its Packages")
	for ns := range e.namespaces {
		var cm corev1.ConfigMap
		g.Expect(e.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "keep-a01-addon-config-4"}, &cm)).To(Succeed())
		g.Expect(cm.Labels).To(HaveKeyWithValue(revisionLabel, "2"))
		g.Expect(e.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "keep-a02-addon-config-4"}, &cm)).NotTo(Succeed(),
			"add-on 2 is hosted: the floors leave it out")
	}
}
