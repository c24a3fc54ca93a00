// Package sectors proves promotion across management clusters end to end: four management
// clusters, each a real kube-apiserver and etcd with simulated HostedClusters and its own
// `convoy controller` process, share one package repository on a real Gitea, the bus. Sector
// canary (two management clusters) runs each commit first; eu and us follow, in parallel, only
// what both canary clusters completed and soaked. Each controller reaches Gitea through a
// faultnet proxy of its own, so that a test can take the Git server away from some of them.
package sectors
