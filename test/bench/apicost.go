package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/rollout"
)

// writeCostNamespace holds the Packages whose writes measureWriteCosts times; they are
// deleted before the controller starts.
const writeCostNamespace = "bench-write-cost"

// writeCost is one kind of write whose cost to the API server measureWriteCosts reports: prepare
// brings n objects to revision 1, write(rev) writes object i at revision rev.
type writeCost struct {
	metric, note string
	prepare      []func(rev int) func(int) error
	write        func(rev int) func(int) error
}

// measureWriteCosts measures what the API server (kube-apiserver and etcd) spends on each
// of a Package's two bookkeeping writes per revision, next to what it spent per object in the
// floor: n applies of a Package's spec at a new revision (the HostedClusterPackage's), then n
// status patches of a Package holding a settled Package's status (4 conditions, 2 phases, an
// inventory of 10 objects). Two more writes say where a Package write's cost lies: the same
// apply to a Package that has no status, and the apply of a small custom resource (the floor's
// Widget). It runs before the controller starts, so nothing else writes.
func (r *rolloutRun) measureWriteCosts(ctx context.Context, floorCPU time.Duration) error {
	c := r.e.admin
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: writeCostNamespace}}); err != nil {
		return err
	}
	applyEach := func(object func(i, rev int) *unstructured.Unstructured) func(rev int) func(int) error {
		return func(rev int) func(int) error {
			return func(i int) error { return applyAll(ctx, c, []*unstructured.Unstructured{object(i, rev)}) }
		}
	}
	applyOf := func(prefix string) func(rev int) func(int) error {
		return applyEach(func(i, rev int) *unstructured.Unstructured { return costPackage(prefix, i, rev) })
	}
	status := func(rev int) func(int) error { return func(i int) error { return patchCostStatus(ctx, c, i, rev) } }
	widgetApply := applyEach(func(i, rev int) *unstructured.Unstructured {
		return widget(writeCostNamespace, fmt.Sprintf("addon-%d", i), rev)
	})
	costs := []writeCost{
		{metric: "CPU per Package apply", note: "kube-apiserver and etcd; a new spec.revision",
			prepare: []func(int) func(int) error{applyOf(""), status}, write: applyOf("")},
		{metric: "CPU per Package status patch", note: "a settled Package's status at a new revision", write: status},
		{metric: "CPU per Package apply, no status", note: "the same apply to a Package that never had a status",
			prepare: []func(int) func(int) error{applyOf("nostatus-")}, write: applyOf("nostatus-")},
		{metric: "CPU per Widget apply", note: "a custom resource of one field, as in the floor",
			prepare: []func(int) func(int) error{widgetApply}, write: widgetApply},
	}
	perObject := ms(floorCPU) / float64(r.n*r.objects)
	scenario := fmt.Sprintf("API server cost N=%d", r.n)
	for _, cost := range costs {
		for _, prepare := range cost.prepare {
			if err := runConcurrently(ctx, r.n, r.e.cfg.Concurrency, prepare(1)); err != nil {
				return err
			}
		}
		// Its baseline, the bare loop, started on a compacted etcd too.
		if err := r.e.compact(ctx); err != nil {
			return err
		}
		cpu, err := r.e.serverCPUOf(func() error { return runConcurrently(ctx, r.n, r.e.cfg.Concurrency, cost.write(2)) })
		if err != nil {
			return err
		}
		r.res.add(Row{Scenario: scenario, Metric: cost.metric, Value: ms(cpu) / float64(r.n), Unit: "ms",
			Baseline: ptr(perObject), BaselineName: "per object, bare SSA loop", Note: cost.note})
	}
	if err := c.DeleteAllOf(ctx, widget("", "", 0), client.InNamespace(writeCostNamespace)); err != nil {
		return err
	}
	return c.DeleteAllOf(ctx, &convoyv1alpha1.Package{}, client.InNamespace(writeCostNamespace))
}

// serverCPUOf returns the API server's and etcd's CPU time spent while fn ran.
func (e *env) serverCPUOf(fn func() error) (time.Duration, error) {
	before, err := e.serverCPU()
	if err != nil {
		return 0, err
	}
	if err := fn(); err != nil {
		return 0, err
	}
	after, err := e.serverCPU()
	return after - before, err
}

// runConcurrently calls fn(0) … fn(n-1) from concurrency workers and returns the first error.
func runConcurrently(ctx context.Context, n, concurrency int, fn func(int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	return first
}

// costPackage is Package i pinned to revision rev (bookkeepingPackage); its name starts with
// prefix.
func costPackage(prefix string, i, rev int) *unstructured.Unstructured {
	return bookkeepingPackage(writeCostNamespace, fmt.Sprintf("%saddon-%d", prefix, i), rev)
}

// bookkeepingPackage is the Package name in namespace pinned to revision rev, with the labels
// of a HostedClusterPackage and a partition and no other metadata: the writecost scenario's
// Package, and the bookkeeping floor's with the packages driver. pinnedPackage adds the rest of
// what a HostedClusterPackage applies.
func bookkeepingPackage(namespace, name string, rev int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(convoyv1alpha1.GroupVersion.String())
	u.SetKind("Package")
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(map[string]string{convoyv1alpha1.GroupVersion.Group + "/hostedclusterpackage": "addon",
		convoyv1alpha1.GroupVersion.Group + "/partition": "default"})
	u.Object["spec"] = map[string]any{
		"sourceRef": map[string]any{"name": gitSourceName, "namespace": benchNamespace},
		"path":      "packages/addon", "interval": "10m0s", "revision": costRevision(rev),
	}
	return u
}

// keptPackageOwner is the UID of the HostedClusterPackage the bookkeeping floor's Packages name
// as their controller. No garbage collector runs in the benchmark, so that it need not exist.
const keptPackageOwner = "00000000-0000-4000-8000-00000000b00c"

// pinnedPackage is the Package name in namespace pinned to revision rev with all a
// HostedClusterPackage applies, as the bookkeeping floor writes it: bookkeepingPackage with the
// rollout's label, its two annotations (the template metadata's hash and when the spec was
// set), its controller reference and convoy's finalizer, so that the floor's Packages are as
// large as convoy's (deleteKeptPackages removes the finalizer).
func pinnedPackage(namespace, name string, rev int) *unstructured.Unstructured {
	u := bookkeepingPackage(namespace, name, rev)
	unstructured.RemoveNestedField(u.Object, "spec", "interval") // the benchmark's templates leave it unset
	u.SetLabels(map[string]string{convoyv1alpha1.HostedClusterPackageLabel: hcpName})
	u.SetAnnotations(map[string]string{rollout.TemplateMetadataAnnotation: rollout.TemplateMetadataHash(convoyv1alpha1.PackageTemplateMetadata{}),
		rollout.SpecUpdatedAtAnnotation: rollout.FormatSpecUpdatedAt(time.Now())})
	yes := true
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: convoyv1alpha1.GroupVersion.String(), Kind: "HostedClusterPackage",
		Name: hcpName, UID: keptPackageOwner, Controller: &yes, BlockOwnerDeletion: &yes}})
	u.SetFinalizers([]string{convoyv1alpha1.Finalizer})
	return u
}

// patchCostStatus writes the status of a settled Package at revision rev to Package i, taking
// the whole object back as the write-cost rows always have (the Package apply's row does too).
func patchCostStatus(ctx context.Context, c client.Client, i, rev int) error {
	name := fmt.Sprintf("addon-%d", i)
	return patchSettledStatus(ctx, c, &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: writeCostNamespace, Name: name}},
		rev, objectsPerPackage)
}

// patchBookkeepingStatus writes the status of a settled Package at revision rev to the Package
// name in namespace, asking for the answer as metadata, as convoy's status patch does
// (pass.MetadataAnswer).
func patchBookkeepingStatus(ctx context.Context, c client.Client, namespace, name string, rev, objects int) error {
	answer := pass.MetadataAnswer(convoyv1alpha1.GroupVersion.WithKind("Package"), client.ObjectKey{Namespace: namespace, Name: name})
	return patchSettledStatus(ctx, c, answer, rev, objects)
}

// patchSettledStatus writes the status of a settled Package at revision rev (4 conditions, 2
// phases, an inventory of objects entries) to the Package that answer names, which receives
// the answer.
func patchSettledStatus(ctx context.Context, c client.Client, answer client.Object, rev, objects int) error {
	raw, err := json.Marshal(map[string]any{"status": settledStatus(answer.GetNamespace(), rev, objects, statusParts{true, true, true})})
	if err != nil {
		return err
	}
	return c.Status().Patch(ctx, answer, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(bareOwner))
}

// settledStatus is the status of a settled Package at revision rev, of the parts asked: 4
// conditions, 2 phases, an inventory of objects entries in namespace; the revision fields always.
func settledStatus(namespace string, rev, objects int, parts statusParts) map[string]any {
	at := metav1.Now().UTC().Format(time.RFC3339)
	commit := costRevision(rev)
	condition := func(typ, status, reason, message string) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": message,
			"lastTransitionTime": at, "observedGeneration": rev}
	}
	status := map[string]any{"observedGeneration": rev, "revision": commit, "lastAttemptedRevision": commit}
	if parts.conditions {
		status["conditions"] = []any{
			condition("Paused", "False", "NotPaused", "Reconciliation is not paused"),
			condition("Progressing", "False", "RevisionAvailable", "Revision "+commit+" is available"),
			condition("Ready", "True", "RevisionAvailable", "Revision "+commit+" is available"),
			condition("Available", "True", "RevisionAvailable", "All 2 phases of revision "+commit+" are available"),
		}
	}
	if parts.phases {
		status["phases"] = []any{map[string]any{"name": "rbac", "objects": 3, "available": true},
			map[string]any{"name": "deploy", "objects": objects - 3, "available": true}}
	}
	if parts.inventory {
		inventory := make([]any, 0, objects)
		for j := range objects {
			inventory = append(inventory, map[string]any{"id": fmt.Sprintf("%s_addon-config-%d__ConfigMap", namespace, j),
				"v": "v1", "cluster": "management", "phase": "deploy"})
		}
		status["inventory"] = inventory
	}
	return status
}

// costRevision is a commit-like name of revision rev.
func costRevision(rev int) string { return strings.Repeat(fmt.Sprint(rev%10), 40) }

// ms converts a duration to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
