// Command faults runs convoy's fault harness (bench.RunFaults): one fleet, the controller as a
// separate process, a rollout per fault with the fault injected mid-rollout. It prints one
// table, writes it as JSON and exits non-zero when an invariant broke. `make faults` runs it
// from the repository root:
//
//	go run ./test/bench/cmd/faults -convoy bin/convoy -clusters 200
package main
