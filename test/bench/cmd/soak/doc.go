// Command soak runs convoy's endurance test (bench.RunSoak): a fleet of HostedClusters and five
// add-ons driven by a seeded random schedule for a chosen duration, the controller as a
// separate process, sampled every 10 s, the invariants checked at every sample and at the end.
// It prints the verdicts, writes the samples and verdicts as JSON, and exits non-zero, naming
// the seed, when an invariant broke. `make soak` runs it from the repository root:
//
//	go run ./test/bench/cmd/soak -convoy bin/convoy -duration 60m -seed 42
package main
