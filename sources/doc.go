// Package sources polls Git repositories for GitSource objects and keeps every fetched commit
// readable by the rest of convoy.
//
// It has four parts:
//
//   - The Store: one bare repository per GitSource under a storage path, fetched
//     incrementally with go-git. A poll lists the remote refs first and fetches nothing when
//     the resolved commit is already stored. [Store.Open] returns an fs.FS of any stored
//     commit, read straight from the object store, and fetches a missing commit on demand.
//   - Revisions: [FormatRevision] is the one function that formats "<ref>@sha1:<commit>",
//     [ParseRevision] its inverse.
//   - The GitSourceReconciler: resolves spec.ref, fetches, verifies the tree against the
//     store's limits and records status.artifact.
//   - The WebhookReceiver: POST /hooks/<namespace>/<name> with a GitHub, GitLab or generic
//     HMAC signature asks for an immediate poll.
//
// Other controllers read a source through [KeyFor] and [Store.Open], and watch GitSource
// artifact changes with [ArtifactChangedPredicate].
package sources
