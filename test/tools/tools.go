//go:build tools

// Package tools pins the kube-apiserver build into this module's go.mod.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
