// Command kube-apiserver is Kubernetes' API server, built from source for convoy's tests and
// `convoy-dev`; it differs from upstream's main only in dying with its parent.
package main
