// Command fluxcrds generates the CRDs of Flux's notification-controller (Alert, Provider,
// Receiver) with controller-gen from the github.com/fluxcd/notification-controller/api module
// at the version deploy/flux was written for, into test/deploy/testdata/flux/stock: the stock
// CRDs that test/deploy applies to a real API server, with and without the deploy/flux
// component. `make flux-crds` runs it; its test fails when the committed files are stale.
//
// Note: the module proxy serves the api module, not the controller's own module (whose
// config/crd it would otherwise copy), so the CRDs are generated from the Go types as the
// controller's build does.
package main
