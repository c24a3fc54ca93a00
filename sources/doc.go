// Package sources polls Git repositories for GitSource objects and keeps every fetched commit
// readable by the rest of convoy.
//
// It has three parts:
//
//   - The Store: one bare repository per GitSource under a storage path, fetched
//     incrementally with go-git. A poll lists the remote refs first and fetches nothing when
//     the resolved commit is already stored. [Store.Open] returns an fs.FS of any stored
//     commit, read straight from the object store, and fetches a missing commit on demand
//     within a timeout, remembering for a growing backoff a commit the remote does not have.
//     [Store.Collect] garbage-collects a repository, keeping the commits its caller still
//     needs, and enforces a size bound per repository.
//   - Revisions: [FormatRevision] is the one function that formats "<ref>@sha1:<commit>",
//     [ParseRevision] its inverse.
//   - Credentials: [AuthFromSecret] reads HTTP basic, bearer token or SSH credentials from a
//     Secret's data, for a [Remote]. [Remote.Redact] removes them from error messages (the
//     store does it for every error it returns) and [RedactURL] fails closed. [URLPolicy]
//     refuses file:// remotes and credentials over http:// unless a controller flag allows them.
//
// The GitSource controller and webhook receiver that drive the store live in
// sources/sourcecontroller. Controllers that follow a source read it through [KeyFor],
// [GetArtifact] and [Store.Open], and watch its artifact with [ArtifactChangedPredicate] and
// [RequestsForFollowers].
package sources
