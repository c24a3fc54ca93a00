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
// The package takes about 1m40s on the shared 2-core machine (92 s of tests; each test also
// builds ./cmd/convoy unless $CONVOY_TEST_CONVOY names a binary): more than make test affords,
// so its two tests are in the Makefile's E2E_TESTS: `make e2e` runs them (and CI with it),
// `make e2e-forge` runs only them, `make test` skips them.
package forgeloop
