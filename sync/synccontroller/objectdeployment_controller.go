package synccontroller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/sync/engine"
)

// +kubebuilder:rbac:groups=convoy.dev,resources=objectdeployments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=convoy.dev,resources=objectdeployments/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=convoy.dev,resources=objectdeployments/finalizers,verbs=update

// ObjectDeploymentReconciler applies the inline phases of ObjectDeployments with the engine;
// the revision is a hash of the template.
type ObjectDeploymentReconciler struct {
	Common
}

// ObjectDeploymentReconcilerOptions tune the ObjectDeployment controller.
type ObjectDeploymentReconcilerOptions struct {
	// MaxConcurrentReconciles is the number of ObjectDeployments reconciled in parallel.
	MaxConcurrentReconciles int
	// RecorderName names the event source; default "convoy-objectdeployment".
	RecorderName string
}

// Reconcile tears down a deleted ObjectDeployment, or runs the steps finalizer → paused →
// template → hosted cluster → target → apply; the deferred status finalizer summarizes the
// conditions and patches the status if it changed.
func (r *ObjectDeploymentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	ctx, done := r.inFlight.start(ctx, req.NamespacedName)
	defer done()
	obj := &convoyv1alpha1.ObjectDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.inShard(obj) {
		return ctrl.Result{}, r.releaseStranded(ctx, obj) // another replica's (convoy.dev/shard)
	}
	s := &scope{obj: obj, status: &obj.Status, paused: obj.Spec.Paused}
	fin := pass.NewStatusFinalizer(r.Client, obj, statusFields(&obj.Status), r.statusOptions())
	defer func() {
		if leftShard(ctx) {
			res, retErr = r.afterMove(req.NamespacedName, &convoyv1alpha1.ObjectDeployment{}), nil
			return
		}
		res, retErr = fin.Finalize(ctx, s.summary(retErr, r.requeueInterval(s, convoyv1alpha1.DefaultPackageInterval), s.desired()))
	}()
	if !obj.DeletionTimestamp.IsZero() {
		s.done = true
		return ctrl.Result{}, r.reconcileDelete(ctx, s)
	}
	return ctrl.Result{}, pass.RunSteps(ctx, s, r.ensureFinalizer, r.reconcilePaused, r.reconcileTemplate,
		r.reconcileHostedCluster, r.reconcileTarget, r.reconcileApply)
}

// reconcileTemplate turns the template into s.revision; an invalid template stalls.
func (r *ObjectDeploymentReconciler) reconcileTemplate(_ context.Context, s *scope) error {
	obj := s.obj.(*convoyv1alpha1.ObjectDeployment)
	id, err := templateHash(&obj.Spec.Template.Spec)
	if err != nil {
		return err
	}
	s.desiredID = id
	rendered, err := manifests.FromObjectSetTemplate(&obj.Spec.Template.Spec)
	if err != nil {
		s.status.LastAttemptedRevision = id
		return renderError(err)
	}
	s.revision = revisionOf(id, rendered)
	return nil
}

// templateHash is the revision of a template: the first 16 hex digits of the SHA-256 of its
// JSON form.
func templateHash(spec *convoyv1alpha1.ObjectSetTemplateSpec) (string, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("hashing the template: %w", err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8]), nil
}

// revisionOf converts a render into the engine's input; the objects are shared, not copied
// (the engine never modifies them).
func revisionOf(id string, r *manifests.Rendered) *engine.Revision {
	rev := &engine.Revision{ID: id, Probes: r.Probes, ProbesDigest: r.ProbesDigest, Phases: make([]engine.Phase, len(r.Phases))}
	for i, ph := range r.Phases {
		rev.Phases[i] = engine.Phase{Name: ph.Name, Class: ph.Class, Objects: ph.Objects, Digests: ph.Digests}
	}
	return rev
}

// renderError classifies a render failure: invalid content stalls, anything else (a store
// that could not read the commit) is transient.
func renderError(err error) error {
	var invalid manifests.Errors
	var one *manifests.Error
	switch {
	case sources.IsStoreRead(err):
		return pass.Retryf(sources.StoreReadFailedReason, "%w", err)
	case errors.As(err, &invalid) || errors.As(err, &one):
		return pass.Stallf(convoyv1alpha1.RenderFailedReason, "%w", err)
	}
	return err
}
