// Command gencrds copies the HostedCluster and HostedControlPlane CRDs out of the pinned
// hypershift api module into test/infrastructure/simfleet/crds, with metadata.annotations
// cleared (the API server rejects the feature-gate annotation's empty name segment).
// `make manifests` runs it.
package main
