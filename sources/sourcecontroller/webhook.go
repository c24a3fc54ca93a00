package sourcecontroller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Webhook request headers: the signatures, in the order they are looked for (the first one a
// call carries is the one checked), then the event names that tell a ping.
const (
	// GitHubSignatureHeader carries "sha256=<hex HMAC-SHA256 of the body>" (GitHub; Gitea sends
	// it too).
	GitHubSignatureHeader = "X-Hub-Signature-256"
	// GiteaSignatureHeader carries the hex HMAC-SHA256 of the body, without a prefix.
	GiteaSignatureHeader = "X-Gitea-Signature"
	// GitLabTokenHeader carries the token itself.
	GitLabTokenHeader = "X-Gitlab-Token"
	// BitbucketServerSignatureHeader carries "sha256=<hex HMAC-SHA256 of the body>" (Bitbucket
	// Server and Data Center; GitHub sends a "sha1=" one under this name too, never checked).
	BitbucketServerSignatureHeader = "X-Hub-Signature"
	// SignatureHeader carries a generic "sha256=<hex HMAC-SHA256 of the body>".
	SignatureHeader = "X-Signature"

	// GitHubEventHeader names a GitHub (and Gitea) event: "ping" when a hook is created.
	GitHubEventHeader = "X-GitHub-Event"
	// BitbucketServerEventHeader names a Bitbucket Server event: "diagnostics:ping" for its
	// "Test connection" button, "repo:refs_changed" for a push.
	BitbucketServerEventHeader = "X-Event-Key"
)

// webhookFieldOwner is the field manager of the requestedAt annotation set by webhooks.
const webhookFieldOwner = "convoy-webhook"

// WebhookTokenKey is the key of the webhook Secret holding the shared token.
const WebhookTokenKey = "token"

// WebhookPathPrefix is the path prefix of webhook calls: POST /hooks/<namespace>/<name>.
const WebhookPathPrefix = "/hooks/"

// DefaultWebhookMaxBodyBytes bounds a webhook body when MaxBodyBytes is unset.
const DefaultWebhookMaxBodyBytes = 1 << 20

// DefaultWebhookReadTimeout bounds the time a whole request, headers and body, may take to
// arrive, so that slow clients cannot hold connections open.
const DefaultWebhookReadTimeout = 15 * time.Second

// DefaultWebhookMaxInFlight bounds the calls whose bodies are read at once when MaxInFlight is
// unset: with the body limit, the memory unauthenticated callers can hold (32 MiB by default).
const DefaultWebhookMaxInFlight = 32

// Further limits of the webhook server.
const (
	webhookWriteTimeout   = 15 * time.Second
	webhookIdleTimeout    = 60 * time.Second
	webhookMaxHeaderBytes = 16 << 10
)

// WebhookReceiver asks for an immediate poll of a GitSource when its Git host calls
// POST /hooks/<namespace>/<name> with a valid signature made with the token of
// spec.webhookSecretRef.
//
// A ping (GitHub's "ping" event when a hook is created, Bitbucket Server's "diagnostics:ping"
// from its "Test connection" button) is answered 200 at once, whatever the path and signature:
// it proves that the forge reaches the receiver, it reads nothing and polls nothing, and every
// path gets the same answer.
//
// Any other call is authenticated before anything else is done: the token comes from caches (the
// GitSource and the Secret's metadata from the manager's informers, the Secret's data read once
// per resourceVersion), so an unauthenticated caller makes the receiver read nothing from the
// API server. An unknown GitSource, one without webhookSecretRef or without a token, and a bad
// or missing signature all get the same answer (401, same body), so that callers cannot
// enumerate GitSources.
//
// Note: a valid call sets the convoy.dev/requestedAt annotation rather than signalling the
// controller in memory: the annotation reaches the leader whichever replica got the call,
// and the handled value shows in status.lastHandledReconcileAt.
type WebhookReceiver struct {
	// Client reads GitSources and Secret metadata from the manager's cache, and patches
	// GitSource annotations.
	Client client.Client
	// SecretReader reads the data of a webhook Secret (uncached), once per resourceVersion.
	SecretReader client.Reader
	// Addr is the listen address of Start, e.g. ":9292".
	Addr string
	// MaxBodyBytes bounds a request body; default DefaultWebhookMaxBodyBytes.
	MaxBodyBytes int64
	// ReadTimeout bounds the reading of a whole request; default DefaultWebhookReadTimeout.
	ReadTimeout time.Duration
	// MaxInFlight bounds the calls handled at once; one more is answered 503 with Retry-After
	// (forges retry). Default DefaultWebhookMaxInFlight.
	MaxInFlight int
	// ReplayWindow is how long an authenticated call's body is remembered: the same body for
	// the same GitSource within it is a replay, answered 200 without a patch. Default
	// DefaultWebhookReplayWindow; negative remembers nothing.
	ReplayWindow time.Duration

	tokensOnce  sync.Once
	tokens      *webhookTokens
	slotsOnce   sync.Once
	slots       chan struct{}
	replaysOnce sync.Once
	replays     *replayCache
}

// Start serves webhooks on Addr until ctx is done (manager.Runnable).
func (w *WebhookReceiver) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", w.Addr)
	if err != nil {
		return fmt.Errorf("webhook receiver: %w", err)
	}
	read := w.ReadTimeout
	if read <= 0 {
		read = DefaultWebhookReadTimeout
	}
	srv := &http.Server{Handler: w, ReadHeaderTimeout: read, ReadTimeout: read,
		WriteTimeout: webhookWriteTimeout, IdleTimeout: webhookIdleTimeout, MaxHeaderBytes: webhookMaxHeaderBytes,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	ctrl.LoggerFrom(ctx).Info("Serving webhooks", "addr", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("webhook receiver: %w", err)
	}
	return nil
}

// NeedLeaderElection is false: every replica accepts webhooks.
func (w *WebhookReceiver) NeedLeaderElection() bool { return false }

// ServeHTTP handles one webhook call: authenticate (from caches), then request the poll.
func (w *WebhookReceiver) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	log := ctrl.LoggerFrom(req.Context()).WithName("webhook")
	if req.Method != http.MethodPost {
		http.Error(rw, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if isPing(req.Header) {
		log.V(1).Info("Answered a ping", "path", req.URL.Path)
		rw.WriteHeader(http.StatusOK)
		return
	}
	if !w.acquireSlot() {
		rw.Header().Set("Retry-After", "1")
		http.Error(rw, "too many webhook calls at once", http.StatusServiceUnavailable)
		return
	}
	defer w.releaseSlot()
	nn, _ := parseHookPath(req.URL.Path)
	token := w.tokenSource().token(req.Context(), nn)
	body, err := io.ReadAll(http.MaxBytesReader(rw, req.Body, w.maxBody()))
	if err != nil {
		http.Error(rw, "request body too large or too slow", http.StatusRequestEntityTooLarge)
		return
	}
	if !authenticated(req.Header, body, token) {
		log.V(1).Info("Refused webhook call", "path", nn.String())
		http.Error(rw, unauthorizedBody, http.StatusUnauthorized)
		return
	}
	w.requestPoll(rw, req, nn, body)
}

// requestPoll asks for a poll of the authenticated call's GitSource nn, unless the same body
// asked within the replay window (replayCache): 202 when asked, 200 for a replay.
func (w *WebhookReceiver) requestPoll(rw http.ResponseWriter, req *http.Request, nn types.NamespacedName, body []byte) {
	log := ctrl.LoggerFrom(req.Context()).WithName("webhook")
	replays := w.replayCache()
	key := replayKey(nn, body)
	if replays != nil && !replays.claim(key) {
		log.V(1).Info("Answered a replayed call without a poll", "gitsource", nn)
		_, _ = io.WriteString(rw, "replayed delivery: the poll was already requested\n")
		return
	}
	if err := w.requestReconcile(req.Context(), nn); err != nil {
		if replays != nil {
			replays.release(key)
		}
		log.Error(err, "Requesting a poll", "gitsource", nn)
		http.Error(rw, "internal error", http.StatusInternalServerError)
		return
	}
	log.V(1).Info("Poll requested", "gitsource", nn)
	rw.WriteHeader(http.StatusAccepted)
}

// replayCache returns the cache of recent calls, made on first use; nil when ReplayWindow is
// negative.
func (w *WebhookReceiver) replayCache() *replayCache {
	w.replaysOnce.Do(func() {
		if w.ReplayWindow >= 0 {
			w.replays = newReplayCache(cmp.Or(w.ReplayWindow, DefaultWebhookReplayWindow), time.Now)
		}
	})
	return w.replays
}

func (w *WebhookReceiver) maxBody() int64 {
	if w.MaxBodyBytes > 0 {
		return w.MaxBodyBytes
	}
	return DefaultWebhookMaxBodyBytes
}

// acquireSlot takes one of the MaxInFlight slots of calls under way, without waiting: false
// when all are taken, so that callers trickling bodies cannot make the receiver hold more than
// MaxInFlight bodies in memory.
func (w *WebhookReceiver) acquireSlot() bool {
	w.initSlots()
	select {
	case w.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// releaseSlot gives back a slot acquireSlot took.
func (w *WebhookReceiver) releaseSlot() { <-w.slots }

// callsInFlight returns how many calls hold a slot.
func (w *WebhookReceiver) callsInFlight() int {
	w.initSlots()
	return len(w.slots)
}

// initSlots makes the slots of MaxInFlight calls on first use.
func (w *WebhookReceiver) initSlots() {
	w.slotsOnce.Do(func() { w.slots = make(chan struct{}, cmp.Or(w.MaxInFlight, DefaultWebhookMaxInFlight)) })
}

// tokenSource returns the token cache, made on first use.
func (w *WebhookReceiver) tokenSource() *webhookTokens {
	w.tokensOnce.Do(func() {
		w.tokens = &webhookTokens{cache: w.Client, api: w.SecretReader, byKey: map[types.NamespacedName]cachedToken{}}
	})
	return w.tokens
}

// requestReconcile sets the convoy.dev/requestedAt annotation to now.
func (w *WebhookReceiver) requestReconcile(ctx context.Context, nn types.NamespacedName) error {
	gs := &convoyv1alpha1.GitSource{}
	gs.Namespace, gs.Name = nn.Namespace, nn.Name
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`,
		convoyv1alpha1.RequestedAtAnnotation, time.Now().UTC().Format(time.RFC3339Nano))
	return w.Client.Patch(ctx, gs, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(webhookFieldOwner))
}
