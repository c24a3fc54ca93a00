// Package bench measures convoy against the floor the API server sets, in one run on one
// machine: it drives a simulated fleet (test/fleet) with `bin/convoy controller` running as a
// separate process, so that the CPU seconds and peak RSS it reports are the controller's own,
// and it measures each baseline (a bare server-side apply loop, an idle API server, the git
// CLI) in the same run, so that figures are read as ratios rather than as absolute times of a
// noisy machine.
//
// Scenarios (docs/evidence/performance.md lists the targets they judge, P1 to P12):
//
//   - rollout: a new commit of a 10-object management-side package rolled out to N
//     HostedClusters, instant and rollingUpgrade maxUnavailable "10%";
//   - steady: 1,000 available Packages and no change for a while: write requests, CPU, RSS;
//   - flux: the rollout's package applied to the same N HCP namespaces by Flux's
//     source-controller and kustomize-controller (built by `make tools`), one Kustomization
//     per namespace as a Flux user has them: install and update against the bare loop, and
//     convoy's install and instant rollout of the same run against Flux's;
//   - git: no-op poll and one-commit fetch of a 5,000-file repository next to `git fetch`
//     (it runs sources' BenchmarkStore);
//   - hosted: a package of 50 objects in hosted-cluster phases on 5 hosted API servers;
//   - fleet: 20 add-ons (HostedClusterPackages of 10-object packages in one repository, 2 of
//     them in hosted-cluster phases on a sample of 5 hosted API servers) over 500
//     HostedClusters: install, one add-on rolled among idle others (against the same rollout
//     in an empty fleet), all rolled by one commit (against the bare loop), steady state;
//   - writecost: variants of a Package status patch, in interleaved rounds, as ratios of the
//     API-server CPU of a ConfigMap apply.
//
// Each rollout step is measured against two floors: the bare loop, and the bookkeeping floor,
// the bare loop plus each Package's pin and status (bookkeeping.go). So are the fleet's install
// and its rollout of every add-on by one commit, over the Packages of the management add-ons
// (fleet_floor.go). A rollout measures its bookkeeping floor before and after its steps and
// judges each step against the mean of both (bookkeeping_bracket.go), unless the steady scenario
// takes its fleet, controller running: then before only. A rollout's gap to the bookkeeping floor
// is accounted for in "waits:" rows (waits.go): the trace of the Package watch (trace.go), the
// controller's reconcile counts and work-queue durations, and the CPU of the machine and of each
// process (machine.go).
//
// The program in test/bench/cmd parses flags and calls Run; `make bench` runs it:
//
//	res, err := bench.Run(ctx, bench.Config{Short: true, Scenarios: []string{"rollout"},
//		ConvoyBinary: "bin/convoy", Out: os.Stdout})
//	bench.PrintTable(os.Stdout, res)
package bench
