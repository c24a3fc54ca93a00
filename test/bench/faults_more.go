package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Credentials of the Git server in the credentials fault.
const (
	gitUser       = "convoy"
	gitPassword   = "s3cret"
	gitAuthSecret = "git-auth"
)

// forcePushUnrelated waits until the rollout has updated a few Packages, then force-pushes
// the followed branch to a new root commit, unrelated to the history being rolled out, with
// the next revision of the packages: the fleet must end on it.
func forcePushUnrelated(ctx context.Context, e *env, tgt *target, row *FaultResult) (time.Time, error) {
	if err := waitUpdated(ctx, e, tgt.get(), 2); err != nil {
		return time.Time{}, err
	}
	files, err := packageFiles(e.rev+1, e.objects)
	if err != nil {
		return time.Time{}, err
	}
	root, err := e.repo.Commit(fmt.Sprintf("unrelated-%d", e.rev+1), fmt.Sprintf("revision %d, a new history", e.rev+1), files)
	if err != nil {
		return time.Time{}, err
	}
	if err := e.repo.ResetBranch("main", root); err != nil {
		return time.Time{}, err
	}
	dropped := tgt.get()
	e.rev, e.commit, e.previous = e.rev+1, root, e.commit
	tgt.set(root)
	if err := e.requestPoll(ctx); err != nil {
		return time.Time{}, err
	}
	row.Note = fmt.Sprintf("%d Packages had been updated to the dropped commit", updatedTo(e, dropped))
	return time.Now(), nil
}

// apiServerRestarted waits until the rollout has updated a few Packages, then restarts the
// management kube-apiserver on the same etcd: the controller's connections and watches end,
// and it must carry on once the API server is back.
func apiServerRestarted(ctx context.Context, e *env, tgt *target, row *FaultResult) (time.Time, error) {
	if err := waitUpdated(ctx, e, tgt.get(), 2); err != nil {
		return time.Time{}, err
	}
	down, err := e.fleet.RestartAPIServer(ctx)
	if err != nil {
		return time.Time{}, err
	}
	row.Note = fmt.Sprintf("the API server was down for %.1f s (etcd kept); %d Packages were updated when it stopped",
		down.Seconds(), updatedTo(e, tgt.get()))
	return time.Now(), nil
}

// storeDeleted waits until the rollout has updated a few Packages, then deletes the Git store
// under the running controller and asks for a poll: the controller must fetch again, keep
// running and finish the rollout without pruning anything.
func storeDeleted(ctx context.Context, e *env, tgt *target, row *FaultResult) (time.Time, error) {
	if err := waitUpdated(ctx, e, tgt.get(), 2); err != nil {
		return time.Time{}, err
	}
	if err := removeUnderWriter(filepath.Join(e.dir, "sources")); err != nil {
		return time.Time{}, err
	}
	deleted := time.Now()
	token, err := e.requestPollToken(ctx)
	if err != nil {
		return deleted, err
	}
	if err := e.waitSourceHandled(ctx, token, 2*time.Minute); err != nil {
		return deleted, err
	}
	row.Note = fmt.Sprintf("the GitSource was Ready again %.1f s after the deletion", time.Since(deleted).Seconds())
	return deleted, nil
}

// credentialsRevoked puts the Git server behind basic auth with the GitSource's credentials,
// then, once the rollout has updated a few Packages, changes the server's password and asks
// for a poll: the GitSource must say AuthenticationFailed. Then the password is restored, and
// the next poll must succeed.
func credentialsRevoked(ctx context.Context, e *env, tgt *target, row *FaultResult) (time.Time, error) {
	if err := e.useGitCredentials(ctx); err != nil {
		return time.Time{}, err
	}
	if err := waitUpdated(ctx, e, tgt.get(), 2); err != nil {
		return time.Time{}, err
	}
	e.git.SetBasicAuth(gitUser, "revoked")
	msg, err := e.waitAuthFailure(ctx)
	e.git.SetBasicAuth(gitUser, gitPassword)
	if err != nil {
		return time.Time{}, err
	}
	back := time.Now()
	token, err := e.requestPollToken(ctx)
	if err != nil {
		return back, err
	}
	if err := e.waitSourceHandled(ctx, token, 2*time.Minute); err != nil {
		return back, err
	}
	row.Note = fmt.Sprintf("GitSource said %s (%q); Ready again %.1f s after the credentials were restored",
		convoyv1alpha1.AuthenticationFailedReason, tail(msg, 60), time.Since(back).Seconds())
	return back, nil
}

// useGitCredentials creates the credentials Secret, points the GitSource at it, then makes the
// Git server require them.
func (e *env) useGitCredentials(ctx context.Context) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: gitAuthSecret},
		StringData: map[string]string{"username": gitUser, "password": gitPassword}}
	if err := client.IgnoreAlreadyExists(e.admin.Create(ctx, secret)); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"spec":{"secretRef":{"name":%q}}}`, gitAuthSecret)
	gs := &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: gitSourceName}}
	if err := e.admin.Patch(ctx, gs, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		return err
	}
	e.git.SetBasicAuth(gitUser, gitPassword)
	return nil
}

// waitAuthFailure asks for polls until the GitSource says AuthenticationFailed, and returns
// its message.
func (e *env) waitAuthFailure(ctx context.Context) (string, error) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := e.requestPollToken(ctx); err != nil {
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
		}
		gs := &convoyv1alpha1.GitSource{}
		if err := e.admin.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: gitSourceName}, gs); err != nil {
			return "", err
		}
		if c := apimeta.FindStatusCondition(gs.Status.Conditions, convoyv1alpha1.FetchFailedCondition); c != nil &&
			c.Status == metav1.ConditionTrue && c.Reason == convoyv1alpha1.AuthenticationFailedReason {
			return c.Message, nil
		}
	}
	return "", fmt.Errorf("the GitSource did not say %s within a minute of the credentials' revocation", convoyv1alpha1.AuthenticationFailedReason)
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// removeUnderWriter deletes dir while the controller may be writing into it: a file it creates
// during the walk fails the removal with "directory not empty", so it tries again, a few times.
func removeUnderWriter(dir string) error {
	var err error
	for range 20 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}
