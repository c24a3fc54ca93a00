// Package process runs the server binaries of the test infrastructure (etcd and kube-apiserver
// for test/infrastructure/controlplane, Prometheus and Alertmanager for
// test/infrastructure/monitoring): each in a process group of its own, logging to a file,
// killed by the kernel when the test process dies, and stopped with SIGTERM, then SIGKILL.
package process
