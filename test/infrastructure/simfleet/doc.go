// Package simfleet simulates a HyperShift management cluster for `convoy-dev`, the tests and the
// benchmarks: a real kube-apiserver and etcd (built from source by `make tools`) with convoy's
// CRDs and HyperShift's HostedCluster and HostedControlPlane CRDs, plus one real API server per
// simulated hosted cluster, wired the way HyperShift wires them: a HostedCluster with labels and
// an Available condition, its HCP namespace holding a HostedControlPlane annotated
// hypershift.openshift.io/cluster, and the service-network-admin-kubeconfig Secret.
//
//	f, err := simfleet.Start(ctx, simfleet.Options{})
//	defer f.Stop()
//	hc, err := f.AddHostedCluster(ctx, simfleet.HostedClusterInput{
//		Name: "blue", Labels: map[string]string{"hypershift.openshift.io/risk-group": "early"}})
//	hc.Client.List(ctx, &corev1.ConfigMapList{}) // talks to the hosted API server
//
// The API servers die with the process that started them (they are built to ask the kernel for
// that), so a demo or test that panics or is killed leaves nothing running. Tests use it
// through test/fleet, which adds what needs the testing package.
package simfleet
