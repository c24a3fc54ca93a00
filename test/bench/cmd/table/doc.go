// Command table prints the Markdown tables of benchmark runs (package benchtable), adds a set of
// runs to the repository's published ones, and rewrites the published tables from their runs
// (`make bench-tables`). It is a command of its own rather than a mode of test/bench/cmd: it
// reads JSON and writes Markdown, needs no API server, and has flags of its own.
//
//	go run ./test/bench/cmd/table print -table "rollout n=1000" r1.json r2.json r3.json
//	go run ./test/bench/cmd/table add -name rollout-1000 -table "rollout n=1000" r1.json r2.json r3.json
//	go run ./test/bench/cmd/table rewrite
package main
