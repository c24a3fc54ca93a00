package sourcecontroller

import (
	"context"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/sources"
)

// RBAC of the GitSource controller; controller-gen reads these package-level markers.
//
// +kubebuilder:rbac:groups=convoy.dev,resources=gitsources,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=convoy.dev,resources=gitsources/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// GitSourceReconciler polls the repository of each GitSource, stores the commit its ref
// resolves to and records it in status.artifact.
type GitSourceReconciler struct {
	// Client reads GitSources (cached) and patches their status.
	Client client.Client
	// APIReader reads Secrets without a cache, so that no informer holds every Secret of the
	// management cluster.
	APIReader client.Reader
	// Store keeps the fetched repositories.
	Store *sources.Store
	// Recorder emits events; nil emits none.
	Recorder events.EventRecorder
	// URLPolicy refuses file:// and credentials over http:// unless allowed.
	URLPolicy sources.URLPolicy

	notifier *pass.Notifier
}

// scope is what one reconcile pass reads and computes; each step documents what it fills in.
type scope struct {
	obj *convoyv1alpha1.GitSource
	key sources.Key
	// remote is set by reconcileAuth.
	remote sources.Remote
	// poll is set by reconcileSource.
	poll sources.PollResult
	// message is the Ready message on success, event a new-revision note; set by
	// reconcileArtifact.
	message, event string
}

// Reconcile runs the steps auth → source → verify → storage → artifact, then the deferred status
// finalizer summarizes the conditions and patches status if it changed.
func (r *GitSourceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	obj := &convoyv1alpha1.GitSource{}
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.Store.Delete(sources.KeyOf(req.NamespacedName))
		}
		return ctrl.Result{}, err
	}
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if obj.Spec.Suspend {
		// Note: a suspended source keeps its status untouched, last artifact included.
		ctrl.LoggerFrom(ctx).V(1).Info("Suspended, not polling")
		return ctrl.Result{}, nil
	}
	fin := pass.NewStatusFinalizer(r.Client, obj, pass.StatusFields{
		ObservedGeneration:     &obj.Status.ObservedGeneration,
		LastHandledReconcileAt: &obj.Status.LastHandledReconcileAt,
	}, pass.StatusOptions{NegativeConditions: negativeConditions, Notifier: r.notifier})
	s := &scope{obj: obj, key: sources.KeyOf(req.NamespacedName)}
	defer func() {
		res, retErr = fin.Finalize(ctx, s.summary(retErr))
	}()
	return ctrl.Result{}, pass.RunSteps(ctx, s, r.reconcileAuth, r.reconcileSource, r.reconcileVerify, r.reconcileStorage, r.reconcileArtifact)
}

// summary hands the pass to the status finalizer, with a jittered poll interval.
func (s *scope) summary(err error) pass.Summary {
	sum := pass.Summary{
		Err:      err,
		Interval: pass.Jitter(s.obj.GetInterval()),
		Message:  s.message,
		Event:    s.event,
	}
	if a := s.obj.Status.Artifact; a != nil {
		sum.EventAnnotations = map[string]string{convoyv1alpha1.RevisionAnnotation: a.Revision}
	}
	return sum
}

// reconcileAuth checks the URL and reads the credentials into s.remote. A bad URL, a missing
// Secret or a missing or malformed key stalls the source.
func (r *GitSourceReconciler) reconcileAuth(ctx context.Context, s *scope) error {
	remote, err := r.remoteOf(ctx, s.obj)
	if err != nil {
		return err
	}
	s.remote = remote
	return nil
}

// remoteOf returns the remote of a GitSource, with its credentials.
func (r *GitSourceReconciler) remoteOf(ctx context.Context, obj *convoyv1alpha1.GitSource) (sources.Remote, error) {
	url := obj.Spec.URL
	if _, err := transport.NewEndpoint(url); err != nil {
		return sources.Remote{}, pass.Stallf(convoyv1alpha1.URLInvalidReason, "invalid URL %s: %s",
			sources.RedactURL(url), sources.Remote{URL: url}.RedactString(err.Error()))
	}
	if obj.Spec.SecretRef == nil {
		if sources.IsSSHURL(url) {
			return sources.Remote{}, pass.Stallf(convoyv1alpha1.InvalidSpecReason,
				"an SSH URL needs spec.secretRef with keys %q and %q", sources.IdentityKey, sources.KnownHostsKey)
		}
		return r.checkURL(sources.Remote{URL: url, Timeout: obj.GetTimeout()})
	}
	secret := &corev1.Secret{}
	nn := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Spec.SecretRef.Name}
	if err := r.APIReader.Get(ctx, nn, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return sources.Remote{}, pass.Stallf(convoyv1alpha1.InvalidSpecReason, "secret %s not found", nn)
		}
		return sources.Remote{}, fmt.Errorf("reading secret %s: %w", nn, err)
	}
	auth, err := sources.AuthFromSecret(secret, url)
	if err != nil {
		return sources.Remote{}, pass.Stallf(convoyv1alpha1.InvalidSpecReason, "%w", err)
	}
	return r.checkURL(sources.Remote{URL: url, Auth: auth, Timeout: obj.GetTimeout()})
}

// checkURL stalls a remote that the URL policy refuses (file://, credentials over http://).
func (r *GitSourceReconciler) checkURL(remote sources.Remote) (sources.Remote, error) {
	if err := r.URLPolicy.Check(remote); err != nil {
		return sources.Remote{}, pass.Stallf(convoyv1alpha1.InsecureURLRefusedReason, "%w", err)
	}
	return remote, nil
}

// reconcileSource lists the remote refs, resolves spec.ref and fetches the commit if it is
// not stored yet (s.poll). It sets FetchFailed=True on failure and removes it on success.
func (r *GitSourceReconciler) reconcileSource(ctx context.Context, s *scope) error {
	ctx, cancel := context.WithTimeout(ctx, s.obj.GetTimeout())
	defer cancel()
	start := time.Now()
	res, err := r.Store.Poll(ctx, s.key, s.remote, s.obj.Spec.Ref)
	if err != nil {
		return markFetchFailed(s.obj, sources.ClassifyGitError("polling "+sources.RedactURL(s.remote.URL), err))
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Polled", "revision", res.Revision.String(), "fetched", res.Fetched,
		"duration", time.Since(start))
	s.poll = res
	setPromotionRefs(s.obj, res)
	return nil
}

// setPromotionRefs records what the poll read of the promotion refs: their digest, or why they
// could not be read (the bus of sectors, which then holds promotion).
func setPromotionRefs(obj *convoyv1alpha1.GitSource, res sources.PollResult) {
	var st convoyv1alpha1.PromotionRefsStatus
	if res.PromotionError != nil {
		st.Error = sources.ClassifyGitError("reading the promotion refs", res.PromotionError).Error()
		if old := obj.Status.Promotion; old != nil {
			st.Digest = old.Digest
		}
	} else {
		st.Digest = res.PromotionRefs
	}
	if st == (convoyv1alpha1.PromotionRefsStatus{}) {
		obj.Status.Promotion = nil
		return
	}
	obj.Status.Promotion = &st
}

// reconcileVerify checks a new commit's tree against the store's limits and for symlinks out
// of the tree; the artifact in status is already verified. Sets FetchFailed=True on failure.
func (r *GitSourceReconciler) reconcileVerify(ctx context.Context, s *scope) error {
	if a := s.obj.Status.Artifact; a != nil && a.Commit == s.poll.Revision.Commit {
		return nil
	}
	if err := r.Store.Verify(ctx, s.key, s.poll.Revision.Commit); err != nil {
		return markFetchFailed(s.obj, sources.ClassifyGitError("verifying "+s.poll.Revision.String(), err))
	}
	pass.Delete(s.obj, convoyv1alpha1.FetchFailedCondition)
	return nil
}

// reconcileArtifact records the revision in status.artifact and sets s.message, and s.event
// when the revision is new; a new commit is logged.
func (r *GitSourceReconciler) reconcileArtifact(ctx context.Context, s *scope) error {
	rev := s.poll.Revision.String()
	pass.Delete(s.obj, convoyv1alpha1.FetchFailedCondition)
	s.message = "stored artifact for revision " + rev
	var previous string
	if a := s.obj.Status.Artifact; a != nil {
		previous = a.Commit
	}
	if !setArtifact(s.obj, s.poll.Revision) {
		return nil
	}
	s.event = "new revision " + rev
	if previous != s.poll.Revision.Commit {
		ctrl.LoggerFrom(ctx).Info("Fetched new commit", "commit", s.poll.Revision.Commit, "previousCommit", previous,
			"ref", s.poll.Revision.Ref, "revision", rev)
	}
	return nil
}
