// Package pass is what every convoy reconciler (GitSource, Package, ObjectDeployment,
// HostedClusterPackage) does in one reconcile pass, written once.
//
// Note: it is named after the pass rather than "reconcile" so that it never needs an alias
// next to controller-runtime's reconcile package, which the same files import.
//
// It holds the things each reconciler would otherwise repeat inline:
//
//   - Ordered steps: a [Step] works on the reconciler's own scope; [RunSteps] runs them in
//     order and stops at the first error, or when the scope reports it is [Finished].
//   - Error classification, in one place: a step returns a [Stalling] error (the user must
//     change the spec or the revision), a [Waiting] error (something else must happen first;
//     requeue later without backoff) or any other error (transient; the workqueue backs off).
//     [Classify] maps the error of a pass to the ctrl.Result, the returned error and the
//     summary conditions; nothing else interprets these types.
//   - Condition helpers over [Object] (any API type with metav1.Condition lists).
//   - A deferred status finalizer, [StatusFinalizer], that summarizes Ready, Reconciling and
//     Stalled from the outcome, bumps observedGeneration only on success or stall, records
//     lastHandledReconcileAt, emits events through [Notifier] and patches the status
//     subresource only when the status changed.
//
// A reconciler uses it as follows:
//
//	func (r *FooReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
//		obj := &convoyv1alpha1.Foo{}
//		if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
//			return ctrl.Result{}, client.IgnoreNotFound(err)
//		}
//		fin := pass.NewStatusFinalizer(r.Client, obj, pass.StatusFields{
//			ObservedGeneration:     &obj.Status.ObservedGeneration,
//			LastHandledReconcileAt: &obj.Status.LastHandledReconcileAt,
//		}, fooOptions)
//		s := &scope{obj: obj}
//		defer func() { res, err = fin.Finalize(ctx, pass.Summary{Err: err, Interval: obj.GetInterval(), Message: s.message}) }()
//		return ctrl.Result{}, pass.RunSteps(ctx, s, r.reconcileSource, r.reconcileApply)
//	}
package pass
