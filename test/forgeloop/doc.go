// Package forgeloop runs the pull-request loop end to end against a real Git forge: Gitea
// (test/infrastructure/forge), `convoy controller` built from ./cmd/convoy and run as a
// process, and a simulated fleet of six HostedClusters in three partitions
// (test/infrastructure/simfleet).
//
// The story (TestFromPullRequestToFleet): a repository on Gitea holding a package, a GitSource
// that follows it with spec.commitStatus and a webhook secret (and an interval of an hour, so
// that only Gitea's push webhook, signed by Gitea itself, triggers a poll), a
// HostedClusterPackage over the three partitions; a pull request that changes the package,
// `convoy diff -o markdown` and `convoy plan -o markdown` posted as its comment through
// Gitea's API, the merge, and the merge commit's status read back from Gitea moving from
// pending ("1/3 partitions, ...") to success; then a broken commit whose status ends as
// failure.
//
// TestBlackholedForgeDoesNotSlowTheRollout times two rollouts of the same run, one reporting
// to Gitea through a proxy that blackholes and one reporting nothing, and checks that the
// status catches up once the proxy forwards again.
//
// The package takes about 1m40s (92 s of tests, the rest building the test binary; each test
// also builds ./cmd/convoy, 12 s warm): more than make test affords, so `make e2e-forge` runs
// it with CONVOY_E2E_FORGE=1, and .ci/run after make test; without it, or under -short, the
// tests skip.
package forgeloop
