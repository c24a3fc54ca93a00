// Package importer is `convoy import`: it reads the objects of the tools a fleet moves away from
// (Flux's GitRepository and Kustomization objects, Package Operator's HostedClusterPackage),
// from files or from a cluster, and writes the convoy objects to commit in their place: a
// GitSource per GitRepository, and a HostedClusterPackage per PKO HostedClusterPackage and per
// set of Kustomizations that apply the same path of the same source into HCP namespaces, each
// with spec.adopt naming the tool, so that the first rollout takes the running objects over.
// What cannot be mapped is said, object by object, in Result.Notes.
//
// The mapping is pure: Import reads objects and returns objects, without reaching a cluster.
package importer
