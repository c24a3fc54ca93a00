// Package synccontroller runs the Package and ObjectDeployment controllers, which drive the
// sync engine (sync/engine).
//
// The PackageReconciler resolves a Package's revision (spec.revision or its GitSource's
// artifact), renders it through the manifests cache and runs the engine; the
// ObjectDeploymentReconciler does the same with inline phases, the revision being a hash of
// the template. Both share the steps of Common (finalizer, paused, hosted cluster, target,
// apply, teardown), run by pass.RunSteps, and one deferred status patch (internal/pass),
// written only when the status changed. Setup is the one place where both are wired on a
// manager, sharing the clients, the hosted-cluster clients (sync/hosted) and the cache of
// applied objects.
//
// The controllers ignore the watch events of the engine's own applies
// (Engine.AppliedByEngine), so an apply does not bring its owner back for a second pass.
package synccontroller
