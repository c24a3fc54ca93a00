package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// teardownTimeout bounds the wait for every Package to be gone after its deletion.
const teardownTimeout = 3 * time.Minute

// runCRDDeleted rolls out a new commit, deletes the Widget CRD out of band once two Packages
// are updated, then deletes the HostedClusterPackage and every Package (there is no garbage
// collector in the test fleet): every teardown must finish, the Widgets' kind being gone,
// and leave none of the package's other objects behind. It ends the fleet, so it runs last.
func runCRDDeleted(ctx context.Context, e *env) FaultResult {
	n := len(e.namespaces)
	row := FaultResult{Fault: FaultCRDDeleted, Clusters: n, Budget: max(1, n/10)}
	gitBefore := e.git.Stats()
	commit, err := commitAndPoll(ctx, e)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	start := time.Now()
	s := startSampler(ctx, e, e.namespaces, &target{commit: commit})
	err = waitUpdated(ctx, e, commit, 2)
	// Note: deleting the CRD makes every Package unavailable at once; that is the fault, not
	// the rollout, so the budget is checked until then.
	row.MaxUnavailable, row.Samples, _ = s.stop()
	into := time.Since(start)
	var deleted time.Time
	if err == nil {
		deleted, err = deleteCRDThenPackages(ctx, e)
	}
	if err == nil {
		err = waitNoPackages(ctx, e, teardownTimeout)
	}
	row.Recovery = time.Since(deleted)
	if err == nil && e.ctrl.Exited() {
		err = fmt.Errorf("the controller exited; see %s", e.ctrl.LogPath())
	}
	left, lerr := countLeft(ctx, e)
	if err == nil {
		err = lerr
	}
	if err != nil {
		row.Error = err.Error()
	}
	row.Note = fmt.Sprintf("CRD deleted %.1f s into the rollout; every Package torn down %.1f s after its deletion, the Widgets' kind gone; %d objects left behind",
		into.Seconds(), row.Recovery.Seconds(), left)
	row.GitFetches = e.git.Stats().Sub(gitBefore).UploadPacks
	row.Passed = row.Error == "" && row.MaxUnavailable <= row.Budget && left == 0
	return row
}

// deleteCRDThenPackages deletes the Widget CRD, gives the controller a few seconds with the
// kind gone, then deletes the HostedClusterPackage and every Package; it returns when the
// Packages were deleted.
func deleteCRDThenPackages(ctx context.Context, e *env) (time.Time, error) {
	if err := e.admin.Delete(ctx, widgetCRD()); err != nil {
		return time.Now(), fmt.Errorf("deleting the Widget CRD: %w", err)
	}
	select {
	case <-ctx.Done():
		return time.Now(), ctx.Err()
	case <-time.After(3 * time.Second):
	}
	hcp := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: hcpName}}
	if err := e.admin.Delete(ctx, hcp); err != nil {
		return time.Now(), err
	}
	deleted := time.Now()
	err := e.forEachNamespace(ctx, func(ns string) error {
		pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hcpName}}
		return client.IgnoreNotFound(e.admin.Delete(ctx, pkg))
	})
	return deleted, err
}

// waitNoPackages waits until no Package is left in the fleet's namespaces.
func waitNoPackages(ctx context.Context, e *env, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, total := e.watch.count(e.namespaces, func(*convoyv1alpha1.Package) bool { return true })
		if total == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d Packages still there %s after their deletion", total, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// countLeft returns how many of the management package's objects, the Widget aside, are still
// in the fleet's namespaces.
func countLeft(ctx context.Context, e *env) (int, error) {
	var mu sync.Mutex
	left := 0
	err := e.forEachNamespace(ctx, func(ns string) error {
		for _, o := range managementObjects(ns, "", e.rev) {
			if o.GroupVersionKind().Group == widgetGroup {
				continue
			}
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(o.GroupVersionKind())
			err := e.admin.Get(ctx, client.ObjectKeyFromObject(o), m)
			if client.IgnoreNotFound(err) != nil {
				return err
			}
			if err == nil {
				mu.Lock()
				left++
				mu.Unlock()
			}
		}
		return nil
	})
	return left, err
}
