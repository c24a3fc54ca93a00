// Package takeover proves the move of a running fleet from Flux to convoy (spec.adopt) against
// a real Flux: source-controller and kustomize-controller from bin/ (make tools), one
// Kustomization per hosted control plane namespace applying an add-on with a Deployment, then
// the steps of docs/guides/moving-from-flux-or-package-operator.md. Its test is in `make e2e`
// and `make e2e-takeover`; it starts its own fleet, so `make test`, which skips it, starts
// nothing here.
package takeover
