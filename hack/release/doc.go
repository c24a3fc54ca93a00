// Command release writes a versioned install file, as `make release VERSION=v0.x.y` runs it:
// `kustomize build deploy/` through kustomize's Go API, with the controller's image pinned to
// the digest of the image index `make image` wrote into the OCI layout, and every object
// labelled with the version. The result is one file to `kubectl apply -f`, the way Flux and
// Argo CD publish theirs.
//
// Usage:
//
//	go run ./hack/release -version v0.1.0 -layout dist/oci -image ghcr.io/convoy-gitops/convoy \
//		-deploy deploy -out dist/install.yaml
package main
