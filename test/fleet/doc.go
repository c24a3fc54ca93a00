// Package fleet runs a test suite on a simulated management cluster (test/infrastructure/simfleet): Main
// starts the fleet once per package, runs the tests and stops every API server, and the Fleet
// adds the helpers that take a test.
//
//	var env *fleet.Fleet
//
//	func TestMain(m *testing.M) {
//		fleet.Main(m, &env, fleet.Options{}, nil)
//	}
//
//	func TestSomething(t *testing.T) {
//		ns := env.NewNamespace(t) // skips the test under go test -short
//		hc, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "blue"})
//		...
//	}
//
// Main is the one place that honours -short: it then starts nothing, and the tests that need the
// fleet skip themselves through Fleet.Require or Fleet.NewNamespace.
package fleet
