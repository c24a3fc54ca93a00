// Package hostile runs a corpus of hostile inputs (Git commits, custom resources and Secrets
// an attacker or a tired author could write) through the real controller: `convoy controller`
// built from ./cmd/convoy and run as a process of its own, against a real API server
// (test/infrastructure/simfleet) and real Git (test/infrastructure/gitserver).
//
// Each case starts from a tenant whose Package is Ready at a good revision, then makes one
// hostile change (a commit, or objects to create or update), and asserts that within its bound
// the object carries a clear condition (the expected reason, and a message naming the object,
// the file or the rule); that the controller process is the same one and still running, with
// a peak resident set (VmHWM) under a stated bound; that a healthy Package of the same run
// still reaches a new commit; that the objects of the good revision were not pruned; and, once
// every case has run, that the credential planted in the hostile inputs appears in no status,
// event or line of the controller's log.
//
// A case is one row of the table in cases_test.go: its name, the files of the hostile commit or
// the change to make, the expected reason and message, and the bound on time. The test logs a
// Markdown table of what convoy answered, how fast and at what peak RSS (the hostile-input
// table of docs/evidence/reliability.md). Under go test -short, fleet.Main starts nothing and the test skips.
//
// The hostile rollout checks (signals_test.go) run in the same process after the corpus: each
// is one row of signalCorpus, a HostedClusterPackage over two HostedClusters (early, late) with
// one check pointed at a hostile endpoint (signals_servers_test.go) or a real Prometheus started
// once for the package; early's check must reach its state with a clear message and event (or
// the rollout stall with InvalidSpec), late must never take the commit, and what the client read
// of a flood must stay within rollout/checks' bounds. Its credential rows (signals_credentials_test.go)
// name Secrets a check may not read (kube-system's, another tenant's, a service account token)
// or credentials over http://: each is refused, naming the Secret and the rule, and the check's
// listener gets no request.
//
// network_test.go adds what a spec makes the controller connect to: a chart repository that
// redirects to another local port (refused; that port gets nothing), and a signed webhook
// delivery replayed twenty times (one patch of the GitSource in all).
package hostile
