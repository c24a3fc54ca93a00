// Package fleet simulates a HyperShift management cluster for tests, benchmarks and `convoy dev`:
// a real kube-apiserver and etcd (built from source by `make tools`) with convoy's CRDs and
// HyperShift's HostedCluster and HostedControlPlane CRDs, plus one real API server per simulated
// hosted cluster, wired the way HyperShift wires them: a HostedCluster with labels and an
// Available condition, its HCP namespace holding a HostedControlPlane annotated
// hypershift.openshift.io/cluster, and the service-network-admin-kubeconfig Secret.
//
// Usage in a package's TestMain (fleet.Main starts the fleet once, runs the tests and stops
// every API server):
//
//	var env *fleet.Fleet
//
//	func TestMain(m *testing.M) {
//		fleet.Main(m, &env, fleet.Options{}, nil)
//	}
//
//	func TestSomething(t *testing.T) {
//		ns := env.NewNamespace(t)
//		hc, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{
//			Name: "blue", Labels: map[string]string{"hypershift.openshift.io/risk-group": "early"}})
//		...
//		hc.Client.List(ctx, &corev1.ConfigMapList{}) // talks to the hosted API server
//	}
//
// The API servers die with the process that started them (they are built to ask the kernel for
// that), so a test that panics or times out leaves nothing running.
package fleet
