// Package kustomizecontroller holds no code: its module pins Flux's kustomize-controller
// (v1.9.5), whose command `make tools` builds into bin/kustomize-controller for the takeover test
// (test/takeover), which moves add-ons from a running Flux to convoy. It is a module of its own
// because it copies kustomize-controller's replace lines and keeps its dependency versions apart
// from the other tools'.
package kustomizecontroller
