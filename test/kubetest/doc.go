// Package kubetest builds, reads and gates Kubernetes objects for integration tests: plain
// unstructured objects and ConfigMaps, Exists and Get through any client, and a gate, a
// ConfigMap whose availability probe passes only once the test opens it; and the values of a
// controller's metric in controller-runtime's registry (ControllerMetric).
//
//	obj := kubetest.Gate(ns, "gate")
//	// ...apply a revision holding obj with kubetest.GateProbe(); its phase waits...
//	kubetest.OpenGate(g, c, ns, "gate")
package kubetest
