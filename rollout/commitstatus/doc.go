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
// host.
//
// Classification (outcomeOf): a missing Secret, a failed read, a transport error, a 408, 429 or
// 5xx is an error, retried with backoff (a 429's or 503's Retry-After honoured); a forbidden
// read, a missing key, a non-Opaque Secret, a redirect or another 4xx is invalid, retried only
// every MaxBackoff, and at once when the GitSource points at another forge, repository or
// Secret. Entries are keyed by HostedClusterPackage and replaced when their target changes.
//
// A HostedClusterPackage that moves to a new commit before the old one's rollout ended leaves
// the old commit an entry of its own (settleLocked): its final state if that had not reached
// the forge, else Superseded (GitLab "canceled"; GitHub and Gitea document no cancelled state:
// GitHub "error", Gitea "warning"), sent like the others and dropped once sent. A change of a
// token Secret (RetrySecret, fed by the metadata-only Secret informer the GitSource controller
// already runs) makes that Secret's failed states due at once.
//
// Each forge is called at its documented endpoint with net/http (provider.go): one POST each.
// The client libraries were weighed: gitlab.com/gitlab-org/api/client-go pulls in
// protovalidate, graphql, keyring and dbus; code.gitea.io/sdk/gitea queries the server's
// version at construction unless SetGiteaVersion("") and reads answers unbounded;
// github.com/google/go-github v84.0.0 (newest on the module proxy, builds with Go 1.26) is
// small (two modules, go-querystring beside it; +1.7 MB of binary) and safe with our client
// (it copies the http.Client, so CheckRedirect stays noRedirect and a 3xx is its
// RedirectionError; no retries or timeouts of its own; typed rate-limit errors with the reset
// time and Retry-After), but it reads an error's body whole, so it needs a bounding transport.
// Adopting it for GitHub is open; until then the Reporter keeps one timeout, one backoff, one
// bounded reader and one place that holds the token for all three.
//
// Metrics: convoy_commit_status_updates_total{provider,outcome}, outcome one of success,
// error (the forge refused or did not answer; retried), invalid (the configuration or the
// Secret is wrong; retried when the next state comes) and dropped (more contexts than
// MaxContexts). Events on the HostedClusterPackage: CommitStatusReported when a state
// reaches the forge, CommitStatusFailed (Warning) when a send fails for the first time.
package commitstatus
