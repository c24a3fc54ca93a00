package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// driftInterval is the spec.interval of the bench's Packages (the default): a settled Package
// whose objects the watch sees passes once per interval.
const driftInterval = convoyv1alpha1.DefaultPackageInterval

// measureDriftPasses makes every Package pass once (convoy.dev/requestedAt, as a user asking
// for a reconcile would) and measures the controller over those passes. A settled Package's
// pass at its spec.interval costs the same, less the status patch that records the request:
// the steady window, shorter than the interval, may see none of them.
func (e *env) measureDriftPasses(ctx context.Context) (window, int, error) {
	list := &convoyv1alpha1.PackageList{}
	if err := e.admin.List(ctx, list); err != nil {
		return window{}, 0, fmt.Errorf("listing Packages: %w", err)
	}
	token := time.Now().UTC().Format(time.RFC3339Nano)
	patch := client.RawPatch("application/merge-patch+json",
		fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, convoyv1alpha1.RequestedAtAnnotation, token))
	before, err := e.take(ctx)
	if err != nil {
		return window{}, 0, err
	}
	defer e.profileDrift(ctx)()
	for i := range list.Items {
		if err := e.admin.Patch(ctx, &list.Items[i], patch); err != nil {
			return window{}, 0, fmt.Errorf("requesting a pass of Package %s/%s: %w", list.Items[i].Namespace, list.Items[i].Name, err)
		}
	}
	if err := e.waitHandled(ctx, token, len(list.Items)); err != nil {
		return window{}, 0, err
	}
	after, err := e.take(ctx)
	return since(before, after), len(list.Items), err
}

// profileDrift captures a CPU profile of the controller over the requested passes when asked
// (-pprof); the returned function waits for it.
func (e *env) profileDrift(ctx context.Context) func() {
	wait := e.profileCPU(ctx, driftProfileSeconds, fmt.Sprintf("drift-%d.cpu.pprof", len(e.namespaces)))
	return func() { _ = wait() }
}

// profileCPU captures, when asked (-pprof), a CPU profile of the controller over the next
// seconds into file (a name ending in .cpu.pprof) of the pprof folder, and the allocations of
// the same seconds beside it (.allocs.pprof); the returned function waits for both and returns
// their error.
func (e *env) profileCPU(ctx context.Context, seconds int, file string) func() error {
	if e.cfg.PprofDir == "" || e.ctrl == nil {
		return func() error { return nil }
	}
	seconds = max(seconds, 1) // zero would ask for pprof's default length, and all allocations
	allocs := strings.TrimSuffix(file, ".cpu.pprof") + ".allocs.pprof"
	done := make(chan error, 2)
	for kind, name := range map[string]string{"profile": file, "allocs": allocs} {
		go func() {
			done <- e.ctrl.CaptureProfile(ctx, fmt.Sprintf("%s?seconds=%d", kind, seconds), filepath.Join(e.cfg.PprofDir, name))
		}()
	}
	return func() error { return errors.Join(<-done, <-done) }
}

// driftProfileSeconds is the length of the CPU profile of the requested passes.
const driftProfileSeconds = 15

// waitHandled waits until n Packages say they handled the request token.
func (e *env) waitHandled(ctx context.Context, token string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for {
		list := &convoyv1alpha1.PackageList{}
		if err := e.admin.List(ctx, list); err != nil {
			return fmt.Errorf("waiting for the requested passes: %w", err)
		}
		handled := 0
		for _, p := range list.Items {
			if p.Status.LastHandledReconcileAt == token {
				handled++
			}
		}
		if handled >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the requested passes: %d of %d handled: %w", handled, n, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// driftShare is the share of a core that packages Packages take passing every driftInterval,
// from w, the window of n requested passes.
func driftShare(w window, n, packages int) float64 {
	if n == 0 {
		return 0
	}
	return float64(packages) / driftInterval.Seconds() * w.cpu.Seconds() / float64(n)
}

// addDriftRows reports the cost of one pass of a settled Package, and what the passes at
// driftInterval cost at 10,000 Packages.
func addDriftRows(res *Results, scenario string, w window, n int) {
	if n == 0 {
		return
	}
	perPass := w.cpu.Seconds() / float64(n)
	at10k := driftShare(w, n, 10_000)
	res.add(Row{Scenario: scenario, Metric: "pass of a settled Package, controller CPU", Value: 1000 * perPass, Unit: "ms",
		Note: fmt.Sprintf("%d passes asked by convoy.dev/requestedAt in %.1f s; %.2f requests each (%s); at 10,000 Packages passing every %s: %.2f%% of a core",
			n, w.wall.Seconds(), w.requests.Total()/float64(n), w.requests.String(), driftInterval, 100*at10k)})
}
