package bench

import (
	"context"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// gitDown returns an injector that takes the Git server down once the rollout has updated two
// Packages: it accepts connections and stalls after the headers, the failure that hangs a
// client without a timeout. The GitSource is asked to poll meanwhile. After downFor the server
// answers again; the controller is back when a new poll makes the GitSource Ready.
func gitDown(downFor time.Duration) injector {
	return func(ctx context.Context, e *env, tgt *target, row *FaultResult) (time.Time, error) {
		if err := waitUpdated(ctx, e, tgt.get(), 2); err != nil {
			return time.Time{}, err
		}
		e.git.SetStalled(true)
		if _, err := e.requestPollToken(ctx); err != nil {
			e.git.SetStalled(false)
			return time.Time{}, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(downFor):
		}
		e.git.SetStalled(false)
		back := time.Now()
		token, err := e.requestPollToken(ctx)
		if err != nil {
			return back, err
		}
		if err := e.waitSourceHandled(ctx, token, 2*time.Minute); err != nil {
			return back, err
		}
		row.Note = fmt.Sprintf("Git stalled for %s (%d requests hung); the GitSource was Ready again %.1f s after",
			downFor, e.git.Stalled(), time.Since(back).Seconds())
		return back, nil
	}
}

// forcePushBack waits until the rollout of the new commit has updated a few Packages, then
// force-pushes the branch back to the previous commit, dropping the one being rolled out, and
// asks for a poll: the fleet must end on the previous commit.
func forcePushBack(ctx context.Context, e *env, tgt *target, row *FaultResult) (time.Time, error) {
	if err := waitUpdated(ctx, e, tgt.get(), 2); err != nil {
		return time.Time{}, err
	}
	dropped := tgt.get()
	if err := e.repo.ResetBranch("main", e.previous); err != nil {
		return time.Time{}, err
	}
	e.rev, e.commit = e.rev-1, e.previous
	tgt.set(e.commit)
	if err := e.requestPoll(ctx); err != nil {
		return time.Time{}, err
	}
	row.Note = fmt.Sprintf("%d Packages had been updated to the dropped commit", updatedTo(e, dropped))
	return time.Now(), nil
}

// requestPollToken asks the GitSource to poll now and returns the request's token.
func (e *env) requestPollToken(ctx context.Context) (string, error) {
	token := time.Now().UTC().Format(time.RFC3339Nano)
	gs := &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: gitSourceName}}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, convoyv1alpha1.RequestedAtAnnotation, token)
	return token, e.admin.Patch(ctx, gs, client.RawPatch("application/merge-patch+json", []byte(patch)))
}

// waitSourceHandled waits until the GitSource handled the poll request token and is Ready.
func (e *env) waitSourceHandled(ctx context.Context, token string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		gs := &convoyv1alpha1.GitSource{}
		err := e.admin.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: gitSourceName}, gs)
		if err == nil && gs.Status.LastHandledReconcileAt == token &&
			apimeta.IsStatusConditionTrue(gs.Status.Conditions, convoyv1alpha1.ReadyCondition) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("the GitSource did not handle poll request %s within %s", token, timeout)
}
