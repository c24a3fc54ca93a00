// Package reconcile is the controller runtime shared by every convoy reconciler (GitSource
// now; Package, ObjectDeployment and HostedClusterPackage later).
//
// It holds the three things each reconciler would otherwise repeat inline:
//
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
//		obj := &v1alpha1.Foo{}
//		if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
//			return ctrl.Result{}, client.IgnoreNotFound(err)
//		}
//		fin := reconcile.NewStatusFinalizer(r.Client, obj, reconcile.StatusFields{
//			ObservedGeneration:     &obj.Status.ObservedGeneration,
//			LastHandledReconcileAt: &obj.Status.LastHandledReconcileAt,
//		}, fooOptions)
//		s := &scope{}
//		defer func() { res, err = fin.Finalize(ctx, reconcile.Summary{Err: err, Interval: obj.GetInterval(), Message: s.message}) }()
//		return ctrl.Result{}, r.runSteps(ctx, s)
//	}
package reconcile
