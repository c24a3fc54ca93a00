// Package syncdoc documents the sync/ folder; it holds no code and nothing imports it. Its name
// is not sync, so that it shadows no standard library package (see the Layout section of
// DEVELOPMENT.md).
//
// sync/ applies a package revision to a cluster and keeps it there, in three packages:
//
//   - engine applies a rendered revision phase by phase with server-side apply, each phase in
//     the hosted control plane namespace on the management cluster or, for class
//     hosted-cluster, inside the hosted cluster; it probes availability, prunes what left the
//     revision and tears down in reverse phase order, only ever deleting objects it owns.
//   - synccontroller holds the Package and ObjectDeployment reconcilers that drive the engine:
//     they resolve the source and render the revision, find the hosted cluster, check what the
//     object may reach, and write one status summary per pass.
//   - hosted hands out clients of hosted clusters from the kubeconfig Secret of their HCP
//     namespace, refusing kubeconfigs that would run code or leak credentials, with a timeout
//     on every request and a circuit that keeps dead clusters from holding workers.
//
// Which revision a Package should be at is decided elsewhere: by its GitSource, or by the
// rollout planner of a HostedClusterPackage (rollout/).
package syncdoc
