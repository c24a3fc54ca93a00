// Package flux runs a real Flux against an API server for the takeover test (test/takeover):
// Flux's source-controller and kustomize-controller, built unmodified from their modules by
// `make tools` into bin/, as processes (test/infrastructure/process), and Flux's own CRDs, read
// from the module cache of the versions built (config/crd/bases of each controller's module,
// found with go list in test/tools/flux/<controller>).
//
// Usage:
//
//	crds, err := flux.CRDs()            // install them on the API server first
//	f, err := flux.Start(ctx, flux.Options{Kubeconfig: path})
//	defer f.Stop()
package flux
