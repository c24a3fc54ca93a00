package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// The bookkeeping floor is the bare loop doing, per cluster, what convoy must write besides the
// objects: the Package's pin (its spec.revision, applied as a HostedClusterPackage applies it)
// before the objects, and a settled Package's status after them, with the bare loop's order and
// concurrency. A Package's spec.revision and status are the record of what each cluster runs,
// so these two writes are the structural floor; what convoy takes above it is its own.

// bookkeepingPrefix starts the names of the bookkeeping floor's objects and Packages.
const bookkeepingPrefix = "keep-"

// floors are the baselines of one measured step: the bare loop and the bookkeeping floor, with
// what the machine did during the bookkeeping floor (keep).
type floors struct {
	bare, bookkeeping time.Duration
	keep              window
}

// bookkeepingLoop applies, for each namespace, the Package pinned at rev, then the package's
// objects (objects of them) at rev one by one, then patches the Package's status, with concurrency workers each
// taking a namespace at a time.
func bookkeepingLoop(ctx context.Context, c client.Client, namespaces []string, rev, objects, concurrency int) (time.Duration, error) {
	start := time.Now()
	err := runConcurrently(ctx, len(namespaces), concurrency, func(i int) error {
		ns, name := namespaces[i], bookkeepingPrefix+packageName
		if err := applyAll(ctx, c, []*unstructured.Unstructured{bookkeepingPackage(ns, name, rev)}); err != nil {
			return err
		}
		if err := applyAll(ctx, c, managementObjectsOf(ns, bookkeepingPrefix, rev, objects)); err != nil {
			return err
		}
		if err := patchBookkeepingStatus(ctx, c, ns, name, rev, objects); err != nil {
			return fmt.Errorf("patching the status of Package %s/%s: %w", ns, name, err)
		}
		return nil
	})
	return time.Since(start), err
}

// measureBookkeepingFloor creates the bookkeeping floor's objects and Packages (timed as the
// install's floor), updates them (timed as the rollouts'), then deletes the Packages, which the
// controller would otherwise reconcile. It runs before the controller starts.
func (r *rolloutRun) measureBookkeepingFloor(ctx context.Context) error {
	namespaces := slices.Sorted(maps.Keys(r.e.namespaces))
	c := r.e.cfg.Concurrency
	logf(r.e.cfg, "rollout N=%d: bookkeeping floor, %d objects and %d Packages at concurrency %d", r.n, r.n*r.objects, r.n, c)
	createBefore, err := r.e.take(ctx)
	if err != nil {
		return err
	}
	if r.keepCreate, err = bookkeepingLoop(ctx, r.e.admin, namespaces, 1, r.objects, c); err != nil {
		return err
	}
	before, err := r.e.take(ctx)
	if err != nil {
		return err
	}
	r.keepCreateWindow = since(createBefore, before)
	if r.keepFloor, err = bookkeepingLoop(ctx, r.e.admin, namespaces, 2, r.objects, c); err != nil {
		return err
	}
	after, err := r.e.take(ctx)
	if err != nil {
		return err
	}
	r.keepWindow = since(before, after)
	r.keepRq = after.server.Sub(before.server)
	r.keepServerCPU = after.serverCPU - before.serverCPU
	return r.e.forEachNamespace(ctx, func(ns string) error {
		pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: bookkeepingPrefix + packageName}}
		return client.IgnoreNotFound(r.e.admin.Delete(ctx, pkg))
	})
}
