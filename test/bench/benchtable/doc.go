// Package benchtable turns the JSON results of benchmark runs (test/bench's
// bench-results.json) into the Markdown tables that README.md and docs/evidence publish, and
// keeps those tables honest: each generated table sits between markers that name its runs,
//
//	<!-- bench-table: rollout n=1000 runs/2026-11-27-f7dd674-rollout-1000-{1,2,3}.json -->
//	…
//	<!-- end bench-table -->
//
// RewriteFile regenerates every such table of a page in place (`make bench-tables`), CheckFile
// fails when a published one differs from what its runs give (a figure or a verdict edited by
// hand) and, through Unbacked, when a target verdict is published outside any fence, where no
// run backs it. AddRuns copies a new set of runs into docs/evidence/runs, with their commit.
//
// A table of several runs gives each figure as the median of the runs, with each run's ratio
// in brackets; a target is met when more than half of the runs met it, which for an odd number
// of runs is exactly when the median meets it.
//
// The command test/bench/cmd/table prints, adds and rewrites the tables:
//
//	go run ./test/bench/cmd/table add -name rollout-1000 -table "rollout n=1000" r1.json r2.json r3.json
package benchtable
