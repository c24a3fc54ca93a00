package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/flux"
)

// The takeover of FaultOldOwnerResumes: a real Flux applies an add-on into every HCP namespace,
// one Kustomization each, from a branch of its own; a HostedClusterPackage of the same name
// adopting from Flux takes it over, following a GitSource of that branch.
const (
	takeoverName = "flux-addon"
	// fluxInterval is the Kustomizations' interval: how often Flux, once resumed, applies its
	// objects again. quietFor spans more than two of them.
	fluxInterval = 20 * time.Second
	quietFor     = 45 * time.Second
	// takeoverTimeout bounds each wait of the fault.
	takeoverTimeout = 5 * time.Minute
	// fluxNameLabel is kustomize-controller's label on what it applies.
	fluxNameLabel = "kustomize.toolkit.fluxcd.io/name"
)

// takeover is one run of FaultOldOwnerResumes.
type takeover struct {
	e    *env
	flux *flux.Flux
	// commit is the add-on's commit on its branch; before the add-on's objects as Flux applied
	// them, by namespace and name.
	commit string
	before map[string]addonObject
}

// addonObject is what the fault keeps of one object of the add-on.
type addonObject struct {
	obj client.Object
	uid types.UID
	rv  string
	// template is a Deployment's pod template, as JSON.
	template string
	// byFlux: the object carries Flux's label; adopted: convoy's convoy.dev/adopted-from.
	byFlux, adopted bool
}

// runOldOwnerResumes runs FaultOldOwnerResumes: the old owner resumed by mistake in the middle
// of the takeover. No object may be deleted, re-created or have its pod template changed;
// convoy must not write in a loop against Flux (the add-on's objects go quiet, each Package
// either done or stopped with TakeoverContested); and the way back the guide gives (suspend
// Flux again, remove the convoy.dev/adopted-from label) must finish the takeover.
func runOldOwnerResumes(ctx context.Context, e *env) FaultResult {
	n := len(e.namespaces)
	row := FaultResult{Fault: FaultOldOwnerResumes, Clusters: n, Budget: max(1, n/10)}
	t := &takeover{e: e}
	err := t.run(ctx, &row)
	if cerr := t.close(ctx); err == nil {
		err = cerr
	}
	if err == nil && e.ctrl.Exited() {
		err = fmt.Errorf("the controller exited; see %s", e.ctrl.LogPath())
	}
	if err != nil {
		row.Error = err.Error()
	}
	row.Passed = row.Error == "" && row.ObjectsLost == 0 && row.WrongRevision == 0
	return row
}

// run applies the add-on with Flux, starts the takeover, resumes Flux once a fifth of the
// namespaces are taken over, waits for the fleet to go quiet, then takes the way back.
func (t *takeover) run(ctx context.Context, row *FaultResult) error {
	e := t.e
	n := len(e.namespaces)
	logf(e.cfg, "faults: %s: Flux applies an add-on into %d HCP namespaces", FaultOldOwnerResumes, n)
	if err := t.startFlux(ctx); err != nil {
		return err
	}
	var err error
	if t.before, err = t.waitObjects(ctx, "applied by Flux", func(o addonObject) bool { return o.byFlux }); err != nil {
		return err
	}
	// As the guide says: suspended, then pruning off, before convoy takes over.
	if err := t.patchKustomizations(ctx, `{"spec":{"suspend":true}}`); err != nil {
		return err
	}
	if err := t.patchKustomizations(ctx, `{"spec":{"prune":false}}`); err != nil {
		return err
	}
	if err := t.createHostedClusterPackage(ctx); err != nil {
		return err
	}
	start := time.Now()
	taken, err := t.waitTaken(ctx, max(1, n/5))
	if err != nil {
		return err
	}
	if err := t.patchKustomizations(ctx, `{"spec":{"suspend":false}}`); err != nil {
		return err
	}
	resumed := time.Since(start)
	logf(e.cfg, "faults: %s: Flux resumed %.1f s into the takeover, %d of %d namespaces taken over", FaultOldOwnerResumes,
		resumed.Seconds(), taken, n)
	writes, err := t.waitQuiet(ctx)
	if err != nil {
		return err
	}
	contested, _ := e.watch.countNamed(e.namespaces, takeoverName, contestedPackage)
	row.ObjectsLost = t.lost()
	if contested == 0 {
		return errors.New("no Package stopped with TakeoverContested after Flux was resumed: the fault did not contest the takeover")
	}

	// The way back: Flux suspended again, the label removed from what it applied again.
	if err := t.patchKustomizations(ctx, `{"spec":{"suspend":true}}`); err != nil {
		return err
	}
	fixed := time.Now()
	if err := t.takeBack(ctx); err != nil {
		return err
	}
	row.WrongRevision, err = t.waitPackages(ctx, progressedAt(t.commit))
	row.Recovery, row.Rollout = time.Since(fixed), time.Since(start)
	if err != nil {
		return err
	}
	row.ObjectsLost = max(row.ObjectsLost, t.lost())
	row.Note = fmt.Sprintf("Flux resumed %.1f s into the takeover (%d of %d namespaces taken over); quiet after %d writes to the "+
		"add-on's %d objects; %d Packages stopped with TakeoverContested; taken over %.1f s after Flux was suspended again and the label removed",
		resumed.Seconds(), taken, n, writes, len(t.before), contested, row.Recovery.Seconds())
	return nil
}

// startFlux installs Flux's CRDs, starts its controllers against the management cluster,
// commits the add-on on its branch and creates the GitRepository and a Kustomization per HCP
// namespace, as a fleet on Flux has them.
func (t *takeover) startFlux(ctx context.Context) error {
	e := t.e
	var err error
	if t.flux, err = e.startFlux(ctx); err != nil {
		return err
	}
	if t.commit, err = e.repo.Commit(takeoverName, "Add the add-on Flux applies", flux.AddonFiles(takeoverName, "addon:1.0")); err != nil {
		return err
	}
	repo := flux.Object("source.toolkit.fluxcd.io/v1", "GitRepository", benchNamespace, takeoverName, map[string]any{
		"url": e.git.HTTPURL(repoName), "interval": "1m", "ref": map[string]any{"branch": takeoverName}})
	if err := e.admin.Create(ctx, repo); err != nil {
		return err
	}
	return e.forEachNamespace(ctx, func(ns string) error {
		return e.admin.Create(ctx, flux.Object("kustomize.toolkit.fluxcd.io/v1", "Kustomization", benchNamespace, "addon-"+ns, map[string]any{
			"interval": fluxInterval.String(), "path": "./" + takeoverName, "prune": true, "targetNamespace": ns,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": takeoverName}}))
	})
}

// patchKustomizations merge-patches every Kustomization of the add-on.
func (t *takeover) patchKustomizations(ctx context.Context, patch string) error {
	return t.e.forEachNamespace(ctx, func(ns string) error {
		ks := flux.Object("kustomize.toolkit.fluxcd.io/v1", "Kustomization", benchNamespace, "addon-"+ns, nil)
		return t.e.admin.Patch(ctx, ks, client.RawPatch(types.MergePatchType, []byte(patch)))
	})
}

// createHostedClusterPackage creates the GitSource of the add-on's branch and the
// HostedClusterPackage that takes the add-on over from Flux, rolling 10% of the fleet at a
// time; its Packages pass every 20 s, as `convoy import` maps the Kustomizations' interval.
func (t *takeover) createHostedClusterPackage(ctx context.Context) error {
	e := t.e
	gs := &convoyv1alpha1.GitSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: takeoverName},
		Spec: convoyv1alpha1.GitSourceSpec{URL: e.git.HTTPURL(repoName), Ref: convoyv1alpha1.GitRef{Branch: takeoverName},
			Interval:   &metav1.Duration{Duration: gitSourceInterval},
			AccessFrom: &convoyv1alpha1.AccessFrom{NamespaceSelectors: []metav1.LabelSelector{{}}}},
	}
	if err := e.admin.Create(ctx, gs); err != nil {
		return err
	}
	hcp := &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: takeoverName},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			HostedClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench.convoy.dev/fleet": "true"}},
			Strategy:              strategy(true),
			Template: convoyv1alpha1.PackageTemplate{Spec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Namespace: benchNamespace, Name: takeoverName},
				Path:      takeoverName,
				Interval:  &metav1.Duration{Duration: fluxInterval},
				Adopt:     &convoyv1alpha1.AdoptSpec{From: []convoyv1alpha1.AdoptOwner{convoyv1alpha1.AdoptFromFlux}},
			}},
		},
	}
	return e.admin.Create(ctx, hcp)
}

// read returns the add-on's objects as they are, by namespace and name.
func (t *takeover) read(ctx context.Context) (map[string]addonObject, error) {
	objs := map[string]addonObject{}
	deployments := &appsv1.DeploymentList{}
	if err := t.e.admin.List(ctx, deployments, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", "addon")}); err != nil {
		return nil, err
	}
	for i := range deployments.Items {
		d := &deployments.Items[i]
		template, err := json.Marshal(d.Spec.Template)
		if err != nil {
			return nil, err
		}
		if !t.e.namespaces[d.Namespace] {
			continue
		}
		o := addonOf(d)
		o.template = string(template)
		objs["Deployment "+d.Namespace+"/"+d.Name] = o
	}
	configMaps := &corev1.ConfigMapList{}
	if err := t.e.admin.List(ctx, configMaps, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", "addon-settings")}); err != nil {
		return nil, err
	}
	for i := range configMaps.Items {
		cm := &configMaps.Items[i]
		if t.e.namespaces[cm.Namespace] {
			objs["ConfigMap "+cm.Namespace+"/"+cm.Name] = addonOf(cm)
		}
	}
	return objs, nil
}

// addonOf returns what the fault keeps of o.
func addonOf(o client.Object) addonObject {
	_, adopted := o.GetLabels()[convoyv1alpha1.AdoptedFromLabel]
	return addonObject{obj: o, uid: o.GetUID(), rv: o.GetResourceVersion(), byFlux: o.GetLabels()[fluxNameLabel] != "", adopted: adopted}
}

// waitObjects waits until each HCP namespace holds the add-on's two objects and every one
// satisfies pred, and returns them.
func (t *takeover) waitObjects(ctx context.Context, what string, pred func(addonObject) bool) (map[string]addonObject, error) {
	want := 2 * len(t.e.namespaces)
	var objs map[string]addonObject
	ok := 0
	deadline := time.Now().Add(takeoverTimeout)
	for time.Now().Before(deadline) {
		var err error
		if objs, err = t.read(ctx); err != nil {
			return nil, err
		}
		ok = 0
		for _, o := range objs {
			if pred(o) {
				ok++
			}
		}
		if len(objs) == want && ok == want {
			return objs, nil
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("after %s, %d of the add-on's %d objects %s (%d exist)", takeoverTimeout, ok, want, what, len(objs))
}

// waitTaken waits until the add-on is taken over in at least n namespaces (its Deployment
// without Flux's label) and returns in how many it is.
func (t *takeover) waitTaken(ctx context.Context, n int) (int, error) {
	deadline := time.Now().Add(takeoverTimeout)
	for time.Now().Before(deadline) {
		objs, err := t.read(ctx)
		if err != nil {
			return 0, err
		}
		taken := 0
		for key, o := range objs {
			if o.template != "" && !o.byFlux && t.before[key].uid != "" {
				taken++
			}
		}
		if taken >= n {
			return taken, nil
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("after %s, the add-on is taken over in fewer than %d namespaces", takeoverTimeout, n)
}

// waitQuiet waits until no object of the add-on was written for quietFor and every Package of
// the takeover is either done or stopped with TakeoverContested, and returns how many writes
// the objects took meanwhile. Writing on after that long is the loop the contest detection
// must prevent.
func (t *takeover) waitQuiet(ctx context.Context) (int, error) {
	last, err := t.read(ctx)
	if err != nil {
		return 0, err
	}
	writes := 0
	quietSince := time.Now()
	deadline := time.Now().Add(takeoverTimeout)
	for time.Now().Before(deadline) {
		if err := sleepCtx(ctx, time.Second); err != nil {
			return writes, err
		}
		now, err := t.read(ctx)
		if err != nil {
			return writes, err
		}
		for key, o := range now {
			if last[key].rv != o.rv {
				writes++
				quietSince = time.Now()
			}
		}
		last = now
		settled, total := t.e.watch.countNamed(t.e.namespaces, takeoverName, func(p *convoyv1alpha1.Package) bool {
			return contestedPackage(p) || progressedAt(t.commit)(p)
		})
		if time.Since(quietSince) >= quietFor && settled == total {
			return writes, nil
		}
	}
	return writes, fmt.Errorf("the add-on's objects still written %s after Flux resumed (%d writes): convoy and Flux write over each other",
		takeoverTimeout, writes)
}

// contestedPackage reports whether p stopped with TakeoverContested.
func contestedPackage(p *convoyv1alpha1.Package) bool {
	c := apimeta.FindStatusCondition(p.Status.Conditions, convoyv1alpha1.StalledCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == convoyv1alpha1.TakeoverContestedReason
}

// takeBack takes the guide's way back, Flux suspended: it removes convoy.dev/adopted-from from
// each object that carries Flux's label again, and waits until convoy took every object over
// again. The label goes again from an object Flux marked once more: a reconcile of Flux's that
// began before the suspension may still apply after the label was removed.
func (t *takeover) takeBack(ctx context.Context) error {
	patch := client.RawPatch(types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/metadata/labels/convoy.dev~1adopted-from"}]`))
	want := 2 * len(t.e.namespaces)
	taken := 0
	deadline := time.Now().Add(takeoverTimeout)
	for time.Now().Before(deadline) {
		objs, err := t.read(ctx)
		if err != nil {
			return err
		}
		taken = 0
		for key, o := range objs {
			switch {
			case o.byFlux && o.adopted:
				if err := t.e.admin.Patch(ctx, o.obj, patch); client.IgnoreNotFound(err) != nil {
					return fmt.Errorf("removing %s from %s: %w", convoyv1alpha1.AdoptedFromLabel, key, err)
				}
			case !o.byFlux && o.adopted:
				taken++
			}
		}
		if taken == want {
			return nil
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
	}
	return fmt.Errorf("after %s, convoy took %d of the add-on's %d objects over again", takeoverTimeout, taken, want)
}

// waitPackages waits until every Package of the takeover satisfies pred; on a timeout it
// returns how many do not.
func (t *takeover) waitPackages(ctx context.Context, pred func(*convoyv1alpha1.Package) bool) (int, error) {
	deadline := time.Now().Add(takeoverTimeout)
	for {
		ok, total := t.e.watch.countNamed(t.e.namespaces, takeoverName, pred)
		if total == len(t.e.namespaces) && ok == total {
			return 0, nil
		}
		if time.Now().After(deadline) {
			return len(t.e.namespaces) - ok, fmt.Errorf("after %s, %d of %d Packages of %s progressed", takeoverTimeout, ok, total, takeoverName)
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return len(t.e.namespaces) - ok, err
		}
	}
}

// lost counts the objects of t.before that are gone, re-created (another UID) or whose pod
// template changed.
func (t *takeover) lost() int {
	now, err := t.read(context.Background())
	if err != nil {
		return len(t.before)
	}
	lost := 0
	for key, b := range t.before {
		o, ok := now[key]
		if !ok || o.uid != b.uid || o.template != b.template {
			lost++
		}
	}
	return lost
}

// close removes what the fault added, so that the faults after it find the fleet as before:
// the Kustomizations (suspended, without pruning, so Flux deletes nothing; gone once Flux
// removed its finalizer) and the GitRepository, then the HostedClusterPackage, whose Packages
// delete the add-on's objects, and its GitSource; then it stops Flux. Flux's CRDs stay.
func (t *takeover) close(ctx context.Context) error {
	e := t.e
	if t.flux == nil {
		return nil
	}
	defer t.flux.Stop()
	kustomization := func(ns string) client.Object {
		return flux.Object("kustomize.toolkit.fluxcd.io/v1", "Kustomization", benchNamespace, "addon-"+ns, nil)
	}
	errs := []error{
		t.patchKustomizations(ctx, `{"spec":{"suspend":true,"prune":false}}`),
		e.forEachNamespace(ctx, func(ns string) error { return client.IgnoreNotFound(e.admin.Delete(ctx, kustomization(ns))) }),
		client.IgnoreNotFound(e.admin.Delete(ctx, flux.Object("source.toolkit.fluxcd.io/v1", "GitRepository", benchNamespace, takeoverName, nil))),
		client.IgnoreNotFound(e.admin.Delete(ctx, &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: takeoverName}})),
		// The test fleet runs no garbage collector: the harness deletes the Packages the
		// HostedClusterPackage owned, as it would.
		e.forEachNamespace(ctx, func(ns string) error {
			return client.IgnoreNotFound(e.admin.Delete(ctx, &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: takeoverName}}))
		}),
	}
	errs = append(errs, t.waitGone(ctx, "Packages of "+takeoverName, func() (int, error) {
		_, total := e.watch.countNamed(e.namespaces, takeoverName, nil)
		return total, nil
	}))
	errs = append(errs, client.IgnoreNotFound(e.admin.Delete(ctx, &convoyv1alpha1.GitSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: takeoverName}})))
	errs = append(errs, t.waitGone(ctx, "Kustomizations of the add-on", func() (int, error) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
		list.SetKind("KustomizationList")
		err := e.admin.List(ctx, list, client.InNamespace(benchNamespace))
		return len(list.Items), err
	}))
	return errors.Join(errs...)
}

// waitGone waits until count says none of what is left.
func (t *takeover) waitGone(ctx context.Context, what string, count func() (int, error)) error {
	deadline := time.Now().Add(teardownTimeout)
	for {
		n, err := count()
		if err != nil || n == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d %s left %s after their deletion", n, what, teardownTimeout)
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
	}
}
