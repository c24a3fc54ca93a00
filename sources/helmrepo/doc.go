// Package helmrepo fetches packaged Helm charts from Helm chart repositories (an HTTP server
// of index.yaml and .tgz files) and OCI registries (oci://, as helm push writes charts) for
// packages that pull a chart by version and digest.
//
// A Fetcher resolves a chart's version in the repository's index, downloads the archive under
// a timeout and size limits, and keeps what it fetched in memory by digest (and name and
// version): a chart is downloaded once, whatever the number of Packages and revisions that pin
// it. It
// does not judge the digest: manifests.Load compares it with the pinned one and refuses the
// package when they differ.
package helmrepo
