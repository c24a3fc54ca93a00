// Package devdemo is `convoy-dev`: it starts a simulated fleet (test/infrastructure/simfleet) spread over
// the partitions early, normal and late, seeds a local Git repository (test/infrastructure/gitserver) from
// examples/packages, applies the example GitSource and HostedClusterPackage, runs the
// controllers the command hands it, and shows the first rollout and then a second commit move
// partition by partition.
package devdemo
