// Package deploy tests the manifests in deploy/: that `kustomize build deploy/` applies to a
// management API server of the test fleet, and that the controller's ServiceAccount, impersonated,
// may do what the controllers need and no more. It holds tests only.
package deploy
