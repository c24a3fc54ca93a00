// Package synccontroller runs the Package and ObjectDeployment controllers, which drive the
// sync engine (sync/engine).
//
// The PackageReconciler resolves a Package's revision (spec.revision or its GitSource's
// artifact), renders it through the manifests cache for the Package's config, metadata and
// component, its HostedCluster and the environment of the cluster it is installed in (the
// management cluster's, ClusterEnvironment: versions, proxy, HyperShift, as Package Operator
// reads them; or, for a package of the Cluster scope, which lands wholly in the hosted cluster,
// the hosted cluster's own, HostedEnvironments; a chart package also gets the API versions
// that cluster serves, from its discovery, cached per cluster: apiversions.go), checks the
// package's constraints against it and runs the engine, then maps the conditions the package's condition-map names onto the
// Package; the
// ObjectDeploymentReconciler does the same with inline phases, the revision being a hash of
// the template. Both share the steps of Common (finalizer, paused, hosted cluster, target,
// apply, teardown), run by pass.RunSteps, and one deferred status patch (internal/pass),
// written only when the status changed. Setup is the one place where both are wired on a
// manager, sharing the clients, the hosted-cluster clients (sync/hosted) and the cache of
// applied objects.
//
// Memory grows with the fleet, so the caches keep little: the cache of applied objects keeps
// the metadata its watches read and a digest of the rest (trimAppliedMetadata), and
// ConfigureCompactCache makes the manager's cache share the strings Packages repeat.
//
// Trust boundaries: a Package may use a GitSource of another namespace only when the source's
// spec.accessFrom selects its namespace or a HostedClusterPackage owns it; a kubeconfig Secret
// that the hosted client policy refuses stalls the object; management objects are applied,
// pruned and torn down as the object's ServiceAccount (spec.serviceAccountName, or
// --default-service-account) when one is set, else with the controller's own rights.
//
// # Files
//
// A Package pass reads package_controller.go (the reconciler, its steps source access → source
// → render, the template data), the steps both controllers share, in the order they run:
// controller.go (Common, the scope, finalizer, paused, apply), controller_target.go (the hosted
// cluster and the clients a pass applies with), controller_status.go (what the engine's result
// writes into status) and controller_teardown.go (the teardown of a deleted object), shard.go (whether the object is this replica's, and the cancellation of
// a pass whose object moves to another shard) and, for the inventory it wrote,
// applied_watches.go. The others: objectdeployment_controller.go (the ObjectDeployment pass,
// whose revision is its template), watches.go (what the controllers watch, index and map to
// requests), applied_watches.go (the watch of applied objects and the per-owner event counts
// the engine's settled passes rely on), cache.go (what the manager's cache keeps), setup.go
// (flags and wiring), environment.go (both environments), package_scope.go (the scope, the
// environment and the constraints of a Package's render, and its condition maps) and
// metrics.go.
//
// The controllers ignore the watch events of the engine's own applies
// (Engine.AppliedByEngine), so an apply does not bring its owner back for a second pass, unless
// the watch told of another change while it ran (engine.Result.Stale): a pass follows 2 s later.
package synccontroller
