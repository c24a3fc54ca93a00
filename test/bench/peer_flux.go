package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/test/infrastructure/flux"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// The flux scenario applies the rollout scenario's management package to the same HCP
// namespaces through Flux, as a fleet on Flux has it: one GitRepository, one Kustomization per
// HCP namespace. Its branch and path are its own, so that nothing of convoy's sees its commits.
const (
	fluxBranch = "flux"
	fluxPath   = "packages/flux-addon"
	fluxSource = "flux-addons"
	// fluxIdleInterval is the interval of the GitRepository and the Kustomizations: longer than
	// any measured step, so that only the commits' requested reconciles move them, as a
	// forge's webhook (Flux's Receiver) would.
	fluxIdleInterval = time.Hour
	// fluxStepTimeout bounds one measured step of Flux.
	fluxStepTimeout = 30 * time.Minute
)

// Kinds of Flux's objects.
var (
	gitRepositoryKind = metav1.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	kustomizationKind = metav1.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
)

// fluxRun is one fleet size of the flux scenario.
type fluxRun struct {
	e    *env
	res  *Results
	n    int
	flux *flux.Flux
	// rev and commit are the last revision of the package on fluxBranch.
	rev    int
	commit string
	// create and update are the bare loop's times to create, then update, every object, and
	// createRq, updateRq, createCPU and updateCPU its requests and the API server's CPU.
	create, update       time.Duration
	createRq, updateRq   Requests
	createCPU, updateCPU time.Duration
}

// startFlux installs Flux's CRDs on the management server and starts its controllers against
// it.
func (e *env) startFlux(ctx context.Context) (*flux.Flux, error) {
	if err := flux.InstallCRDs(ctx, e.admin); err != nil {
		return nil, err
	}
	kubeconfig, err := simfleet.KubeConfigFor(e.fleet.Config, "management")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(e.dir, "flux-kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return nil, err
	}
	return flux.Start(ctx, flux.Options{Kubeconfig: path})
}

// runFluxScenario runs the flux scenario at each size of the run.
func runFluxScenario(ctx context.Context, cfg Config, res *Results) error {
	for _, n := range cfg.Sizes {
		if err := runFluxAt(ctx, cfg, res, n); err != nil {
			return fmt.Errorf("flux N=%d: %w", n, err)
		}
	}
	return nil
}

// runFluxAt measures the bare loop, then Flux installing the package in n HCP namespaces and
// updating it to a new revision. convoy's controller does not run.
func runFluxAt(ctx context.Context, cfg Config, res *Results, n int) error {
	logf(cfg, "flux N=%d: starting the management server and %d HostedClusters", n, n)
	e, err := newEnv(ctx, cfg, envInput{Clusters: n})
	if err != nil {
		return err
	}
	r := &fluxRun{e: e, res: res, n: n}
	defer func() {
		if r.flux != nil {
			r.flux.Stop()
		}
		_ = e.close()
	}()
	for _, step := range []func(context.Context) error{r.measureFloor, r.start, r.install, r.updateStep} {
		if err := step(ctx); err != nil {
			if r.flux != nil {
				err = fmt.Errorf("%w\nsource-controller's last lines:\n%s\nkustomize-controller's last lines:\n%s", err,
					r.flux.Log("source-controller", 10), r.flux.Log("kustomize-controller", 10))
			}
			return err
		}
	}
	return nil
}

// measureFloor times the bare loop creating the objects at revision 1, then updating them to
// revision 2, at the benchmark's concurrency: the floors of Flux's install and update.
func (r *fluxRun) measureFloor(ctx context.Context) error {
	logf(r.e.cfg, "flux N=%d: bare SSA loop, %d objects at concurrency %d", r.n, r.n*objectsPerPackage, r.e.cfg.Concurrency)
	var err error
	r.create, r.createRq, r.createCPU, err = r.bare(ctx, 1)
	if err != nil {
		return err
	}
	r.update, r.updateRq, r.updateCPU, err = r.bare(ctx, 2)
	return err
}

// bare applies every bare copy of the objects at rev and measures it from the server side.
func (r *fluxRun) bare(ctx context.Context, rev int) (time.Duration, Requests, time.Duration, error) {
	before, err := r.e.begin(ctx)
	if err != nil {
		return 0, nil, 0, err
	}
	took, err := bareLoop(ctx, r.e.admin, r.e.bareBatches(rev), r.e.cfg.Concurrency)
	if err != nil {
		return 0, nil, 0, err
	}
	after, err := r.e.take(ctx)
	if err != nil {
		return 0, nil, 0, err
	}
	return took, after.server.Sub(before.server), after.serverCPU - before.serverCPU, nil
}

// start installs Flux's CRDs, commits revision 1 of the package on its branch, starts Flux's
// controllers and creates the GitRepository, then waits until it has fetched the commit.
func (r *fluxRun) start(ctx context.Context) error {
	e := r.e
	if err := r.commitNext(); err != nil {
		return err
	}
	var err error
	if r.flux, err = e.startFlux(ctx); err != nil {
		return err
	}
	repo := flux.Object("source.toolkit.fluxcd.io/v1", "GitRepository", benchNamespace, fluxSource, map[string]any{
		"url": e.git.HTTPURL(repoName), "interval": fluxIdleInterval.String(), "ref": map[string]any{"branch": fluxBranch}})
	if err := e.admin.Create(ctx, repo); err != nil {
		return err
	}
	return waitFlux(ctx, e.admin, gitRepositoryKind, 1, fetched(r.commit), fluxStepTimeout)
}

// commitNext commits the next revision of the package on fluxBranch: the objects of the
// management package, which kustomize-controller builds from the kustomization.yaml.
func (r *fluxRun) commitNext() error {
	r.rev++
	var b strings.Builder
	for _, o := range managementObjectsOf("", "", r.rev, objectsPerPackage) {
		raw, err := json.Marshal(o.Object)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "---\n%s\n", raw)
	}
	commit, err := r.e.repo.Commit(fluxBranch, fmt.Sprintf("Revision %d of the add-on", r.rev), map[string]string{
		fluxPath + "/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [objects.yaml]\n",
		fluxPath + "/objects.yaml":       b.String(),
	})
	r.commit = commit
	return err
}

// install creates a Kustomization per HCP namespace and waits until every one applied the
// commit.
func (r *fluxRun) install(ctx context.Context) error {
	logf(r.e.cfg, "flux N=%d: installing with a Kustomization per HCP namespace", r.n)
	return r.measure(ctx, installStep, func(ctx context.Context) error {
		return r.e.forEachNamespace(ctx, func(ns string) error {
			return r.e.admin.Create(ctx, flux.Object("kustomize.toolkit.fluxcd.io/v1", "Kustomization", benchNamespace, "addon-"+ns,
				map[string]any{"interval": fluxIdleInterval.String(), "path": "./" + fluxPath, "prune": true, "targetNamespace": ns,
					"sourceRef": map[string]any{"kind": "GitRepository", "name": fluxSource}}))
		})
	})
}

// updateStep commits the next revision, asks source-controller to fetch it, as Flux's webhook
// Receiver does, and waits until every Kustomization applied it.
func (r *fluxRun) updateStep(ctx context.Context) error {
	logf(r.e.cfg, "flux N=%d: updating every object to a new revision", r.n)
	return r.measure(ctx, "update", func(ctx context.Context) error {
		if err := r.commitNext(); err != nil {
			return err
		}
		repo := flux.Object("source.toolkit.fluxcd.io/v1", "GitRepository", benchNamespace, fluxSource, nil)
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano))
		return r.e.admin.Patch(ctx, repo, client.RawPatch(types.MergePatchType, []byte(patch)))
	})
}

// measure runs act, waits until every Kustomization applied the commit and adds the step's
// rows.
func (r *fluxRun) measure(ctx context.Context, name string, act func(context.Context) error) error {
	before, err := r.e.begin(ctx)
	if err != nil {
		return err
	}
	usage, err := r.usage()
	if err != nil {
		return err
	}
	if err := act(ctx); err != nil {
		return err
	}
	if err := waitFlux(ctx, r.e.admin, kustomizationKind, r.n, applied(r.commit), fluxStepTimeout); err != nil {
		return err
	}
	after, err := r.e.take(ctx)
	if err != nil {
		return err
	}
	used, err := r.usage()
	if err != nil {
		return err
	}
	w := since(before, after)
	w.cpu, w.peakRSS = used.CPU-usage.CPU, used.PeakRSS
	r.addRows(name, w)
	return nil
}

// usage sums the CPU time and the peak RSS of Flux's controllers.
func (r *fluxRun) usage() (Usage, error) {
	var u Usage
	for _, pid := range r.flux.PIDs() {
		cpu, err := cpuTime(pid)
		if err != nil {
			return u, err
		}
		hwm, _, err := memory(pid)
		if err != nil {
			return u, err
		}
		u.CPU += cpu
		u.PeakRSS += hwm
	}
	return u, nil
}

// fetched is true of a GitRepository whose artifact is commit.
func fetched(commit string) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		rev, _, _ := unstructured.NestedString(u.Object, "status", "artifact", "revision")
		return strings.HasSuffix(rev, ":"+commit)
	}
}

// applied is true of a Kustomization that applied commit and is ready.
func applied(commit string) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		rev, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
		return strings.HasSuffix(rev, ":"+commit) && fluxReady(u)
	}
}

// fluxReady reports whether a Flux object's Ready condition is True for its generation.
func fluxReady(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		cond, _ := c.(map[string]any)
		if cond["type"] == "Ready" {
			gen, _, _ := unstructured.NestedInt64(cond, "observedGeneration")
			return cond["status"] == "True" && gen == u.GetGeneration()
		}
	}
	return false
}

// waitFlux waits until n objects of kind in the benchmark's namespace satisfy done, with one
// watch (re-listed when it ends) rather than repeated lists, so that the wait costs the API
// server as little as the rollout's.
func waitFlux(ctx context.Context, c client.WithWatch, kind metav1.GroupVersionKind, n int,
	done func(*unstructured.Unstructured) bool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(kind.Group + "/" + kind.Version)
	list.SetKind(kind.Kind + "List")
	var finished doneSet
	for {
		if err := c.List(ctx, list, client.InNamespace(benchNamespace)); err != nil {
			return fmt.Errorf("listing %ss: %w", kind.Kind, err)
		}
		finished = doneSet{}
		for i := range list.Items {
			finished.set(list.Items[i].GetName(), done(&list.Items[i]))
		}
		if finished.count >= n {
			return nil
		}
		wi, err := c.Watch(ctx, list, client.InNamespace(benchNamespace),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
		if err != nil {
			return fmt.Errorf("watching %ss: %w", kind.Kind, err)
		}
		for ev := range wi.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				finished.set(u.GetName(), done(u))
			}
			if finished.count >= n {
				wi.Stop()
				return nil
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%d of %d %ss done after %s", finished.count, n, kind.Kind, timeout)
		}
	}
}

// doneSet is which objects, by name, are done, and how many.
type doneSet struct {
	names map[string]bool
	count int
}

func (d *doneSet) set(name string, done bool) {
	if d.names == nil {
		d.names = map[string]bool{}
	}
	if d.names[name] != done {
		d.count += map[bool]int{true: 1, false: -1}[done]
	}
	d.names[name] = done
}
