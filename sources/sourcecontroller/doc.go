// Package sourcecontroller runs the GitSource controller and the webhook receiver on the Git
// store of package sources.
//
// The GitSourceReconciler runs the steps auth → source → verify → storage → artifact
// (pass.RunSteps): it reads the credentials of spec.secretRef, resolves spec.ref on the
// remote, fetches only when the remote moved, checks the commit's tree against the store's
// limits, garbage-collects the repository keeping what Packages and ControllerRevisions refer
// to, and records status.artifact, with one deferred status patch written only when the status
// changed; a URL the URL policy refuses stalls the source. Each new commit is logged once at
// the default verbosity, "Fetched new commit" with the keys commit, previousCommit and ref. The WebhookReceiver turns a signed
// push notification (GitHub, GitLab, Gitea, Bitbucket Server or a generic HMAC, classified in
// one table of signature schemes) into an immediate poll, authenticating the call from caches
// before anything else and answering every unauthenticated call the same way; a forge's ping
// is answered without a poll. Setup wires both, and
// the store they share, on a manager.
package sourcecontroller
