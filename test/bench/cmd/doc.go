// Command bench runs convoy's benchmark scenarios (see package bench), prints one table and
// writes it as JSON. `make bench` runs it from the repository root:
//
//	go run ./test/bench/cmd -convoy bin/convoy -short -scenarios rollout,git
package main
