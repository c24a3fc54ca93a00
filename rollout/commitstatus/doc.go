// Package commitstatus reports the rollouts of HostedClusterPackages on the commits they roll
// out, as commit statuses in the forge that hosts the repository (GitHub, GitLab or Gitea, as
// a GitSource's spec.commitStatus says): one status context "convoy/<name>" per
// HostedClusterPackage, pending with "2/3 partitions, 412/1000 clusters" while it
// progresses, success when it completes, failure when it stalls or is rejected.
//
// The Reporter runs beside the rollout, never in its path. The HostedClusterPackage
// controller hands it the state it wants a context to show (Report, which only writes into a
// map under a mutex and never waits); a single worker sends the latest wanted state of each
// context, at most one request per Interval, each within Timeout (its connection within 3 s),
// and retries a failed send with an exponential backoff up to MaxBackoff. API hosts take
// turns (round robin), and a host that does not answer is backed off as a whole, so it costs
// one attempt per backoff period, not one per context. States reported while a send waits coalesce:
// only the latest is sent, so a forge sees one request per change of partition or outcome,
// not one per Package. A forge that is down, slow or blackholes its connections therefore
// delays only the statuses, never a reconcile; once it answers again the latest state of
// every context is sent.
//
// The token is read from the GitSource's Secret (key "token") at each send, through a reader
// that does not cache Secrets; it goes into the request's header only, never into a log line,
// an event or a metric. An http:// API URL, which would carry the token in clear, is refused
// unless AllowInsecureHTTP (--commit-status-allow-insecure-http, apart from Git's flag). Only
// Opaque Secrets are read: a service account token Secret also has a "token" key, and whoever
// edits a GitSource chooses both the Secret and the URL. Redirects are never followed (they
// would carry the token elsewhere); a redirect is a refused send naming only the Location's
// host. The API URL connects only where internal/dialpolicy allows (Network): no link-local or
// cloud metadata address, judged on the literal host before sending and on each resolved
// address at dial time, unless --allow-link-local-addresses; a refused address is invalid.
//
// Classification (outcomeOf): a missing Secret, a failed read, a transport error, a 408, 429 or
// 5xx is an error, retried with backoff (a 429's or 503's Retry-After honoured); a forbidden
// read, a missing key, a non-Opaque Secret, a redirect, a refused address or another 4xx is
// invalid, retried only every MaxBackoff, and at once when the GitSource points at another
// forge, repository or Secret. Entries are keyed by HostedClusterPackage and replaced when their target changes.
//
// A HostedClusterPackage that moves to a new commit before the old one's rollout ended leaves
// the old commit an entry of its own (settleLocked): its final state if that had not reached
// the forge, else Superseded (GitLab "canceled"; GitHub and Gitea document no cancelled state:
// GitHub "error", Gitea "warning"), sent like the others and dropped once sent. A change of a
// token Secret (RetrySecret, fed by the metadata-only Secret informer the GitSource controller
// already runs) makes that Secret's failed states due at once.
//
// Client libraries (clients.go), weighed for issue 45: GitHub goes through
// github.com/google/go-github v84.0.0 (the newest the module proxy serves; builds with Go
// 1.26): two modules (go-querystring beside it), +7.0 MB of controller binary (5.5%). It copies
// the http.Client it is given, so CheckRedirect stays noRedirect and a 3xx is its
// RedirectionError; its token transport sends to apiURL only; it has no retries or timeouts of
// its own; its rate-limit errors carry the primary limit's reset and the secondary limit's
// Retry-After, which become the wait (a 403 of an exhausted limit is not held as invalid).
// Gitea goes through code.gitea.io/sdk/gitea (already required by the tests; +1.8 MB) with its
// version query turned off (SetGiteaVersion("")), so the real-Gitea tests prove the library
// path. Both read answers whole: every answer is bounded by boundedTransport. GitLab stays on
// net/http at its documented endpoint (provider.go): gitlab.com/gitlab-org/api/client-go pulls
// in protovalidate, graphql, keyring and dbus for one POST.
//
// Under a sector (--sector, --management-cluster) the context is
// "convoy/<sector>/<management cluster>/<name>" (WithScope), and the statuses are also a bus of
// promotion across management clusters: Read returns the latest status of each context on a
// commit (GitHub's and Gitea's combined status, GitLab's latest statuses), under the same
// rules as a send (Opaque Secret, https unless allowed, no redirect, bounded answers, the token
// in no error), a page of 100 (Gitea: 50) at a time and at most 20 pages: a commit with more contexts is an
// error rather than a partial answer, so a status that could not be read is never taken for
// one never posted. Reads are served again for ReadTTL, so the HostedClusterPackages of one
// repository share one request per commit, and a forge's rate limit (a 429 or 503 with its
// Retry-After, an exhausted limit until its reset, else a minute) stops the reads with that
// token until it ends: they fail at once meanwhile, and a downstream holds.
//
// Metrics: convoy_commit_status_updates_total{provider,outcome}, outcome one of success,
// error (the forge refused or did not answer; retried), invalid (the configuration or the
// Secret is wrong; retried when the next state comes) and dropped (more contexts than
// MaxContexts). Events on the HostedClusterPackage: CommitStatusReported when a state
// reaches the forge, CommitStatusFailed (Warning) when a send fails for the first time.
package commitstatus
