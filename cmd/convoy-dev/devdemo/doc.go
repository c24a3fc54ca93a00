// Package devdemo is `convoy-dev`: it starts a simulated fleet (test/infrastructure/simfleet) spread over
// the partitions early, normal and late, seeds a local Git repository (test/infrastructure/gitserver) from
// examples/packages, applies the example GitSource and HostedClusterPackage (with a short soak
// after each partition but the last and an approval before late), runs the controllers the
// command hands it, and shows the first rollout and then a second commit move partition by
// partition, saying when a partition soaks and which `convoy approve` command lets late start.
package devdemo
