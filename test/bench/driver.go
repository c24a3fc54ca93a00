package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Drivers: how the benchmark makes Packages follow the GitSource.
const (
	// DriverAuto uses a HostedClusterPackage when the controller reconciles them, else Packages.
	DriverAuto = "auto"
	// DriverHostedClusterPackage creates one HostedClusterPackage selecting the simfleet.
	DriverHostedClusterPackage = "hostedclusterpackage"
	// DriverPackages creates one Package per HCP namespace; the benchmark itself paces a
	// rollingUpgrade, as the HostedClusterPackage controller would.
	DriverPackages = "packages"
)

// hcpName names the benchmark's HostedClusterPackage.
const hcpName = "fleet-addon"

// hcpControllerName is the HostedClusterPackage controller's name in controller-runtime.
const hcpControllerName = "hostedclusterpackage"

// maxUnavailable is the rollingUpgrade budget of the benchmark.
var maxUnavailable = intstr.FromString("10%")

// packageTemplate is the Package spec every driver stamps out.
func packageTemplate(path string) convoyv1alpha1.PackageTemplateSpec {
	return convoyv1alpha1.PackageTemplateSpec{
		SourceRef: convoyv1alpha1.SourceReference{Namespace: benchNamespace, Name: gitSourceName},
		Path:      path,
	}
}

// packageTemplate is the Package spec this env's drivers stamp out: packageTemplate, with the
// env's spec.interval when it has one.
func (e *env) packageTemplate(path string) convoyv1alpha1.PackageTemplateSpec {
	t := packageTemplate(path)
	if e.packageInterval > 0 {
		t.Interval = &metav1.Duration{Duration: e.packageInterval}
	}
	return t
}

// strategy returns the HostedClusterPackage strategy.
func strategy(rolling bool) convoyv1alpha1.HostedClusterPackageStrategy {
	if rolling {
		return convoyv1alpha1.HostedClusterPackageStrategy{RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{
			MaxUnavailable: &maxUnavailable}}
	}
	return convoyv1alpha1.HostedClusterPackageStrategy{Instant: &convoyv1alpha1.InstantStrategy{}}
}

// createHostedClusterPackage creates the HostedClusterPackage selecting the simfleet.
func (e *env) createHostedClusterPackage(ctx context.Context) error {
	hcp := &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: hcpName},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			HostedClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench.convoy.dev/fleet": "true"}},
			Strategy:              strategy(false),
			Template:              convoyv1alpha1.PackageTemplate{Spec: e.packageTemplate(managementPath)},
		},
	}
	if err := e.admin.Create(ctx, hcp); err != nil {
		return fmt.Errorf("creating the HostedClusterPackage: %w", err)
	}
	return nil
}

// setHostedClusterPackageStrategy switches the HostedClusterPackage's strategy.
func (e *env) setHostedClusterPackageStrategy(ctx context.Context, rolling bool) error {
	// Read again on a conflict: the controller writes the status between the read and the update.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hcp := &convoyv1alpha1.HostedClusterPackage{}
		if err := e.admin.Get(ctx, client.ObjectKey{Name: hcpName}, hcp); err != nil {
			return err
		}
		hcp.Spec.Strategy = strategy(rolling)
		return e.admin.Update(ctx, hcp)
	})
}

// createPackages creates one Package of path per HCP namespace, following the GitSource.
func (e *env) createPackages(ctx context.Context, name, path string) error {
	return e.forEachNamespace(ctx, func(ns string) error {
		return e.admin.Create(ctx, &convoyv1alpha1.Package{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       convoyv1alpha1.PackageSpec{PackageTemplateSpec: e.packageTemplate(path)},
		})
	})
}

// pinPackage sets spec.revision of the Package name in ns.
func (e *env) pinPackage(ctx context.Context, ns, name, commit string) error {
	patch := fmt.Sprintf(`{"spec":{"revision":%q}}`, commit)
	pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return e.admin.Patch(ctx, pkg, client.RawPatch("application/merge-patch+json", []byte(patch)))
}

// forEachNamespace runs fn for every HCP namespace, eight at a time.
func (e *env) forEachNamespace(ctx context.Context, fn func(ns string) error) error {
	sem := make(chan struct{}, 8)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for ns := range e.namespaces {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ns); err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// paceRollingUpgrade moves the Packages name to commit with at most budget of them updating
// at once, each next one started as soon as one progresses: what the HostedClusterPackage
// controller does for rollingUpgrade, done by the benchmark while that controller is missing.
func (e *env) paceRollingUpgrade(ctx context.Context, name, commit string, budget int, timeout time.Duration) error {
	pending := make([]string, 0, len(e.namespaces))
	for ns := range e.namespaces {
		pending = append(pending, ns)
	}
	inFlight := map[string]bool{}
	done := progressedAt(commit)
	deadline := time.Now().Add(timeout)
	for len(pending) > 0 || len(inFlight) > 0 {
		for ns := range inFlight {
			if e.watch.progressed(ns, name, done) {
				delete(inFlight, ns)
			}
		}
		for len(inFlight) < budget && len(pending) > 0 {
			ns := pending[0]
			pending = pending[1:]
			if err := e.pinPackage(ctx, ns, name, commit); err != nil {
				return err
			}
			inFlight[ns] = true
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rollingUpgrade: %d Packages pending and %d updating after %s", len(pending), len(inFlight), timeout)
		}
		select {
		case <-e.watch.changed:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// waitRolloutsCompleted waits until the named HostedClusterPackages have written the end of
// their rollout (current revision = update revision, at their generation): their last status
// patch and events come after their Packages', and must not fall into a window measured next.
func (e *env) waitRolloutsCompleted(ctx context.Context, names ...string) error {
	deadline := time.Now().Add(time.Minute)
	for _, name := range names {
		for {
			hcp := &convoyv1alpha1.HostedClusterPackage{}
			if err := e.admin.Get(ctx, client.ObjectKey{Name: name}, hcp); err != nil {
				return err
			}
			st := hcp.Status
			if st.UpdateRevision != "" && st.CurrentRevision == st.UpdateRevision && st.ObservedGeneration == hcp.Generation {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("HostedClusterPackage %s has not completed its rollout a minute after its Packages", name)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}
