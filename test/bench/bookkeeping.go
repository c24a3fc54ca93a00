package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/sync/engine"
)

// The bookkeeping floor is the bare loop doing, per Package, what convoy must write besides the
// objects: the Package's pin (its spec.revision, applied as a HostedClusterPackage applies it)
// before the objects, and a settled Package's status after them, with the bare loop's order and
// concurrency. A Package's spec.revision and status are the record of what each cluster runs,
// so these two writes are the structural floor; what convoy takes above it is its own.

// bookkeepingPrefix starts the names of the bookkeeping floor's objects and Packages.
const bookkeepingPrefix = "keep-"

// bookkeepingAfterPrefix starts the names of the rollout's bookkeeping floor measured after
// convoy's steps: the first floor's objects are still there, and the second must create its own.
const bookkeepingAfterPrefix = "keep2-"

// bookkeepingDeleteConcurrency is how many of the bookkeeping floor's Packages are deleted at once.
const bookkeepingDeleteConcurrency = 8

// floors are the baselines of one measured step: the bare loop's time and the bookkeeping
// floor's pass of the step's kind, from one or both sides of convoy's steps.
type floors struct {
	bare time.Duration
	keep floorBracket
}

// keptPackage is one Package of the bookkeeping floor: its namespace and name, and the name
// prefix and number of the management objects written between its pin and its status.
type keptPackage struct {
	namespace, name, prefix string
	objects                 int
	// plain pins the Package as the packages driver's are (bookkeepingPackage); else as a
	// HostedClusterPackage applies it (pinnedPackage).
	plain bool
}

// pin returns the Package's pin at rev.
func (p keptPackage) pin(rev int) *unstructured.Unstructured {
	if p.plain {
		return bookkeepingPackage(p.namespace, p.name, rev)
	}
	return pinnedPackage(p.namespace, p.name, rev)
}

// floorPass is one measured pass of a floor: its wall time, the API server's requests, and
// the CPU time the API server and etcd spent.
type floorPass struct {
	wall      time.Duration
	requests  Requests
	serverCPU time.Duration
	// window is what the machine did during the pass.
	window window
	// packageBytes is the size of the first Package as stored after the pass (storedSize).
	packageBytes int
}

// bookkeepingFloor is the bookkeeping floor of a scenario: the pass that creates the objects
// and Packages (the install's floor) and the pass that updates them (the rollouts').
type bookkeepingFloor struct {
	create, update floorPass
}

// passFor returns the pass that is the floor of the rollout's step: create for the install,
// update for a rollout.
func (f bookkeepingFloor) passFor(step string) floorPass {
	if step == installStep {
		return f.create
	}
	return f.update
}

// bookkeepingLoop applies, for each of packages in order, the Package pinned at rev, then its
// objects at rev one by one, then patches the Package's status, with concurrency workers each
// taking a Package at a time. Each Package's objects are built when its turn comes. Each write
// asks for the answer convoy asks for (applyAsConvoy, patchBookkeepingStatus).
func bookkeepingLoop(ctx context.Context, c client.Client, packages []keptPackage, rev, concurrency int) (time.Duration, error) {
	start := time.Now()
	err := runConcurrently(ctx, len(packages), concurrency, func(i int) error {
		p := packages[i]
		if err := applyAsConvoy(ctx, c, append([]*unstructured.Unstructured{p.pin(rev)},
			managementObjectsOf(p.namespace, p.prefix, rev, p.objects)...)); err != nil {
			return err
		}
		if err := patchBookkeepingStatus(ctx, c, p.namespace, p.name, rev, p.objects); err != nil {
			return fmt.Errorf("patching the status of Package %s/%s: %w", p.namespace, p.name, err)
		}
		return nil
	})
	return time.Since(start), err
}

// applyAsConvoy applies objs one by one, each asking for the answer convoy asks for: a Package
// (the HostedClusterPackage's pin) and an object whose kind the engine judges by its metadata
// (engine.MetadataJudgedKind) answer as metadata in protobuf (pass.ApplyForMetadata); other
// objects, such as the Widget its probe reads, answer whole.
func applyAsConvoy(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	opts := []client.PatchOption{client.ForceOwnership, client.FieldOwner(bareOwner)}
	for _, o := range objs {
		gk := o.GroupVersionKind().GroupKind()
		var err error
		if gk == convoyv1alpha1.GroupVersion.WithKind("Package").GroupKind() || engine.MetadataJudgedKind(gk) {
			_, err = pass.ApplyForMetadata(ctx, c, o, opts...)
		} else {
			err = c.Patch(ctx, o, client.Apply, opts...)
		}
		if err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// measureBookkeepingFloor runs the bookkeeping floor over packages: a pass creating their
// objects and Packages at revision 1, then a pass updating them to revision 2, each between two
// snapshots; then it deletes the Packages, which the controller would otherwise reconcile. It
// runs while no controller does, so nothing else writes. A Package watch like the one that
// times convoy's steps (watch.go) runs through both passes: the benchmark's instrument costs
// the floor what it costs convoy. With -pprof, the API server's CPU profile of the update pass
// goes to profile (see startAPIServerProfile).
func (e *env) measureBookkeepingFloor(ctx context.Context, res *Results, packages []keptPackage, profile string) (bookkeepingFloor, error) {
	var out bookkeepingFloor
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if _, err := watchPackages(watchCtx, e.admin); err != nil {
		return out, err
	}
	var err error
	if out.create, err = e.measureFloorPass(ctx, packages, 1); err != nil {
		return out, err
	}
	stopProfile := e.startAPIServerProfile(ctx, res, profile, apiProfileSeconds)
	out.update, err = e.measureFloorPass(ctx, packages, 2)
	stopProfile()
	if err != nil {
		return out, err
	}
	return out, deleteKeptPackages(ctx, e.admin, packages)
}

// measureFloorPass runs the bookkeeping loop over packages at rev between two snapshots.
func (e *env) measureFloorPass(ctx context.Context, packages []keptPackage, rev int) (floorPass, error) {
	before, err := e.begin(ctx)
	if err != nil {
		return floorPass{}, err
	}
	wall, err := bookkeepingLoop(ctx, e.admin, packages, rev, e.cfg.Concurrency)
	if err != nil {
		return floorPass{}, err
	}
	after, err := e.take(ctx)
	if err != nil {
		return floorPass{}, err
	}
	// The loop's requests are the benchmark's own: count them from the server side.
	pass := floorPass{wall: wall, requests: after.server.Sub(before.server), serverCPU: after.serverCPU - before.serverCPU,
		window: since(before, after)}
	if len(packages) > 0 {
		if pass.packageBytes, err = storedSize(ctx, e.admin, packages[0].namespace, packages[0].name); err != nil {
			return floorPass{}, err
		}
	}
	return pass, nil
}

// storedSize returns the size of the Package namespace/name as the API server stores and serves
// it: its JSON, managed fields included.
func storedSize(ctx context.Context, c client.Client, namespace, name string) (int, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(convoyv1alpha1.GroupVersion.WithKind("Package"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		return 0, fmt.Errorf("reading Package %s/%s: %w", namespace, name, err)
	}
	raw, err := u.MarshalJSON()
	return len(raw), err
}

// deleteKeptPackages deletes the Packages of the bookkeeping floor, their finalizer removed
// first; their objects stay, as the bare loop's do.
func deleteKeptPackages(ctx context.Context, c client.Client, packages []keptPackage) error {
	noFinalizer := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	return runConcurrently(ctx, len(packages), bookkeepingDeleteConcurrency, func(i int) error {
		pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: packages[i].namespace, Name: packages[i].name}}
		if err := client.IgnoreNotFound(c.Patch(ctx, pkg, noFinalizer)); err != nil {
			return fmt.Errorf("removing the finalizer of the bookkeeping floor's Package %s/%s: %w", pkg.Namespace, pkg.Name, err)
		}
		if err := client.IgnoreNotFound(c.Delete(ctx, pkg)); err != nil {
			return fmt.Errorf("deleting the bookkeeping floor's Package %s/%s: %w", pkg.Namespace, pkg.Name, err)
		}
		return nil
	})
}

// keptPackages returns a bookkeeping floor of the rollout scenario: one Package per HCP
// namespace, in the namespaces' order, with the package's objects, named after prefix.
func (r *rolloutRun) keptPackages(prefix string) []keptPackage {
	namespaces := slices.Sorted(maps.Keys(r.e.namespaces))
	out := make([]keptPackage, 0, len(namespaces))
	for _, ns := range namespaces {
		out = append(out, keptPackage{namespace: ns, name: prefix + packageName, prefix: prefix, objects: r.objects,
			plain: r.e.cfg.Driver == DriverPackages})
	}
	return out
}

// measureBookkeepingFloor measures the rollout scenario's bookkeeping floor before convoy's
// steps: the create pass is the install's floor, the update pass the rollouts'. It runs before
// the controller starts.
func (r *rolloutRun) measureBookkeepingFloor(ctx context.Context) error {
	logf(r.e.cfg, "rollout N=%d: bookkeeping floor, %d objects and %d Packages at concurrency %d", r.n, r.n*r.objects, r.n, r.e.cfg.Concurrency)
	var err error
	r.keepBefore, err = r.e.measureBookkeepingFloor(ctx, r.res, r.keptPackages(bookkeepingPrefix), fmt.Sprintf("N%d-keep", r.n))
	return err
}

// measureBookkeepingFloorAfter measures the bookkeeping floor again after convoy's steps, under
// names of its own (bookkeepingAfterPrefix), once the controller and the benchmark's Package
// watch have stopped: nothing runs beside it that did not run beside the floor before the steps.
// The machine and the API server warm up over a run, so that a floor measured first only would
// flatter convoy (bookkeeping_bracket.go).
func (r *rolloutRun) measureBookkeepingFloorAfter(ctx context.Context) error {
	if err := r.e.stopController(); err != nil {
		return fmt.Errorf("stopping the controller before the bookkeeping floor after the steps: %w", err)
	}
	logf(r.e.cfg, "rollout N=%d: bookkeeping floor after the steps, the controller stopped", r.n)
	keep, err := r.e.measureBookkeepingFloor(ctx, r.res, r.keptPackages(bookkeepingAfterPrefix), fmt.Sprintf("N%d-keep2", r.n))
	if err != nil {
		return err
	}
	r.keepAfter = &keep
	logf(r.e.cfg, "rollout N=%d: bookkeeping floor before and after the steps: create %s and %s, update %s and %s", r.n,
		r.keepBefore.create.wall.Round(time.Millisecond), keep.create.wall.Round(time.Millisecond),
		r.keepBefore.update.wall.Round(time.Millisecond), keep.update.wall.Round(time.Millisecond))
	return nil
}
