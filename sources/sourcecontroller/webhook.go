package sourcecontroller

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Webhook request headers.
const (
	// GitHubSignatureHeader carries "sha256=<hex HMAC-SHA256 of the body>".
	GitHubSignatureHeader = "X-Hub-Signature-256"
	// GitLabTokenHeader carries the token itself.
	GitLabTokenHeader = "X-Gitlab-Token"
	// SignatureHeader carries a generic "sha256=<hex HMAC-SHA256 of the body>".
	SignatureHeader = "X-Signature"
)

// webhookFieldOwner is the field manager of the requestedAt annotation set by webhooks.
const webhookFieldOwner = "convoy-webhook"

// WebhookTokenKey is the key of the webhook Secret holding the shared token.
const WebhookTokenKey = "token"

// WebhookPathPrefix is the path prefix of webhook calls: POST /hooks/<namespace>/<name>.
const WebhookPathPrefix = "/hooks/"

// DefaultWebhookMaxBodyBytes bounds a webhook body when MaxBodyBytes is unset.
const DefaultWebhookMaxBodyBytes = 1 << 20

// WebhookReceiver asks for an immediate poll of a GitSource when its Git host calls
// POST /hooks/<namespace>/<name> with a valid signature made with the token of
// spec.webhookSecretRef. A bad or missing signature gets 401 and changes nothing.
//
// Note: a valid call sets the convoy.dev/requestedAt annotation rather than signalling the
// controller in memory: the annotation reaches the leader whichever replica got the call,
// and the handled value shows in status.lastHandledReconcileAt.
type WebhookReceiver struct {
	// Client reads GitSources and patches their annotations.
	Client client.Client
	// SecretReader reads the webhook Secrets (uncached).
	SecretReader client.Reader
	// Addr is the listen address of Start, e.g. ":9292".
	Addr string
	// MaxBodyBytes bounds a request body; default DefaultWebhookMaxBodyBytes.
	MaxBodyBytes int64
}

// Start serves webhooks on Addr until ctx is done (manager.Runnable).
func (w *WebhookReceiver) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", w.Addr)
	if err != nil {
		return fmt.Errorf("webhook receiver: %w", err)
	}
	srv := &http.Server{Handler: w, ReadHeaderTimeout: 10 * time.Second,
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

// ServeHTTP handles one webhook call.
func (w *WebhookReceiver) ServeHTTP(rw http.ResponseWriter, req *http.Request) {
	log := ctrl.LoggerFrom(req.Context()).WithName("webhook")
	if req.Method != http.MethodPost {
		http.Error(rw, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	nn, ok := parseHookPath(req.URL.Path)
	if !ok {
		http.NotFound(rw, req)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(rw, req.Body, w.maxBody()))
	if err != nil {
		http.Error(rw, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	token, status := w.token(req.Context(), nn)
	if status != http.StatusOK {
		http.Error(rw, http.StatusText(status), status)
		return
	}
	if !validSignature(req.Header, body, token) {
		log.Info("Refused webhook call with a bad signature", "gitsource", nn)
		http.Error(rw, "invalid signature", http.StatusUnauthorized)
		return
	}
	if err := w.requestReconcile(req.Context(), nn); err != nil {
		log.Error(err, "Requesting a poll", "gitsource", nn)
		http.Error(rw, "internal error", http.StatusInternalServerError)
		return
	}
	log.V(1).Info("Poll requested", "gitsource", nn)
	rw.WriteHeader(http.StatusAccepted)
}

func (w *WebhookReceiver) maxBody() int64 {
	if w.MaxBodyBytes > 0 {
		return w.MaxBodyBytes
	}
	return DefaultWebhookMaxBodyBytes
}

// parseHookPath parses /hooks/<namespace>/<name>.
func parseHookPath(p string) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(p, WebhookPathPrefix)
	if !ok {
		return types.NamespacedName{}, false
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// token returns the webhook token of a GitSource, or the HTTP status to answer with. A
// GitSource without webhookSecretRef is reported as not found.
func (w *WebhookReceiver) token(ctx context.Context, nn types.NamespacedName) ([]byte, int) {
	gs := &convoyv1alpha1.GitSource{}
	if err := w.Client.Get(ctx, nn, gs); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, http.StatusNotFound
		}
		ctrl.LoggerFrom(ctx).Error(err, "Reading GitSource", "gitsource", nn)
		return nil, http.StatusInternalServerError
	}
	if gs.Spec.WebhookSecretRef == nil {
		return nil, http.StatusNotFound
	}
	secret := &corev1.Secret{}
	snn := types.NamespacedName{Namespace: nn.Namespace, Name: gs.Spec.WebhookSecretRef.Name}
	if err := w.SecretReader.Get(ctx, snn, secret); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading webhook secret", "secret", snn)
		return nil, http.StatusInternalServerError
	}
	token := secret.Data[WebhookTokenKey]
	if len(token) == 0 {
		ctrl.LoggerFrom(ctx).Info("Webhook secret has no token key", "secret", snn, "key", WebhookTokenKey)
		return nil, http.StatusInternalServerError
	}
	return token, http.StatusOK
}

// validSignature checks, in order, a GitHub, GitLab or generic signature.
func validSignature(h http.Header, body, token []byte) bool {
	switch {
	case h.Get(GitHubSignatureHeader) != "":
		return validHMAC(h.Get(GitHubSignatureHeader), body, token)
	case h.Get(GitLabTokenHeader) != "":
		return subtle.ConstantTimeCompare([]byte(h.Get(GitLabTokenHeader)), token) == 1
	case h.Get(SignatureHeader) != "":
		return validHMAC(h.Get(SignatureHeader), body, token)
	}
	return false
}

// validHMAC checks "sha256=<hex>" against the HMAC-SHA256 of body keyed with token.
func validHMAC(sig string, body, token []byte) bool {
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	return hmac.Equal(got, Sign(body, token))
}

// Sign returns the HMAC-SHA256 of body keyed with token (what a Git host sends, hex-encoded
// after "sha256=").
func Sign(body, token []byte) []byte {
	m := hmac.New(sha256.New, token)
	m.Write(body)
	return m.Sum(nil)
}

// requestReconcile sets the convoy.dev/requestedAt annotation to now.
func (w *WebhookReceiver) requestReconcile(ctx context.Context, nn types.NamespacedName) error {
	gs := &convoyv1alpha1.GitSource{}
	gs.Namespace, gs.Name = nn.Namespace, nn.Name
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`,
		convoyv1alpha1.RequestedAtAnnotation, time.Now().UTC().Format(time.RFC3339Nano))
	return w.Client.Patch(ctx, gs, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(webhookFieldOwner))
}
