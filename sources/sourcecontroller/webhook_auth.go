package sourcecontroller

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// unauthorizedBody is the one answer to every call that does not authenticate, whatever the
// reason: unknown GitSource, no webhook Secret, bad or missing signature.
const unauthorizedBody = "unauthorized"

// unknownToken stands in for the token of a GitSource that has none, so that an unknown
// source costs the same work as a bad signature; nobody knows it, so nothing matches it.
var unknownToken = func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}()

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

// authenticated checks the call's signature against token; a nil token (no such source, or
// no usable Secret) is checked against unknownToken and fails.
func authenticated(h http.Header, body, token []byte) bool {
	known := len(token) > 0
	if !known {
		token = unknownToken
	}
	return validSignature(h, body, token) && known
}

// signatureScheme is how one kind of Git host signs a call: the header and the check of its
// value against the body and the token.
type signatureScheme struct {
	header string
	valid  func(value string, body, token []byte) bool
}

// signatureSchemes are the schemes of the Git hosts, in the order their headers are looked
// for: the first header a call carries decides, and a wrong value there is not made up for by
// another header. GitHub's comes before Gitea's because Gitea sends both, with the same HMAC.
var signatureSchemes = []signatureScheme{
	{header: GitHubSignatureHeader, valid: validHMAC},
	{header: GiteaSignatureHeader, valid: validBareHMAC},
	{header: GitLabTokenHeader, valid: sameToken},
	{header: BitbucketServerSignatureHeader, valid: validHMAC},
	{header: SignatureHeader, valid: validHMAC},
}

// validSignature checks the call with the scheme of the first signature header it carries.
func validSignature(h http.Header, body, token []byte) bool {
	for _, s := range signatureSchemes {
		if v := h.Get(s.header); v != "" {
			return s.valid(v, body, token)
		}
	}
	return false
}

// isPing tells a forge's test call, which proves that the forge reaches the receiver and asks
// for nothing: GitHub's ping event and Bitbucket Server's diagnostics:ping.
func isPing(h http.Header) bool {
	return h.Get(GitHubEventHeader) == "ping" || h.Get(BitbucketServerEventHeader) == "diagnostics:ping"
}

// validHMAC checks "sha256=<hex>" against the HMAC-SHA256 of body keyed with token.
func validHMAC(sig string, body, token []byte) bool {
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	return ok && validBareHMAC(hexSig, body, token)
}

// validBareHMAC checks "<hex>" against the HMAC-SHA256 of body keyed with token.
func validBareHMAC(hexSig string, body, token []byte) bool {
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	return hmac.Equal(got, Sign(body, token))
}

// sameToken checks a token sent as it is (GitLab) against token, in constant time.
func sameToken(sent string, _, token []byte) bool {
	return subtle.ConstantTimeCompare([]byte(sent), token) == 1
}

// Sign returns the HMAC-SHA256 of body keyed with token (what a Git host sends, hex-encoded
// after "sha256=").
func Sign(body, token []byte) []byte {
	m := hmac.New(sha256.New, token)
	m.Write(body)
	return m.Sum(nil)
}

// webhookTokens hands out the webhook tokens of GitSources from caches: the GitSource and the
// metadata of its Secret come from the manager's informers; the Secret's data is read through
// the API only when its resourceVersion is not the one cached. Safe for concurrent use.
type webhookTokens struct {
	cache client.Reader
	api   client.Reader

	mu    sync.Mutex
	byKey map[types.NamespacedName]cachedToken
}

// cachedToken is the token of a Secret at a resourceVersion.
type cachedToken struct {
	resourceVersion string
	token           []byte
}

// token returns the webhook token of the GitSource nn, or nil when there is none: no such
// GitSource, no webhookSecretRef, no Secret or no token key. Errors are logged, never
// returned to the caller.
func (t *webhookTokens) token(ctx context.Context, nn types.NamespacedName) []byte {
	if nn.Name == "" {
		return nil
	}
	gs := &convoyv1alpha1.GitSource{}
	if err := t.cache.Get(ctx, nn, gs); err != nil || gs.Spec.WebhookSecretRef == nil {
		return nil
	}
	snn := types.NamespacedName{Namespace: nn.Namespace, Name: gs.Spec.WebhookSecretRef.Name}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := t.cache.Get(ctx, snn, meta); err != nil {
		return nil
	}
	if tok, ok := t.cached(snn, meta.ResourceVersion); ok {
		return tok
	}
	secret := &corev1.Secret{}
	if err := t.api.Get(ctx, snn, secret); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading webhook secret", "secret", snn)
		return nil
	}
	tok := secret.Data[WebhookTokenKey]
	if len(tok) == 0 {
		ctrl.LoggerFrom(ctx).Info("Webhook secret has no token key", "secret", snn, "key", WebhookTokenKey)
	}
	t.store(snn, cachedToken{resourceVersion: meta.ResourceVersion, token: tok})
	return tok
}

// cached returns the token of snn cached at resourceVersion.
func (t *webhookTokens) cached(snn types.NamespacedName, resourceVersion string) ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.byKey[snn]
	return c.token, ok && c.resourceVersion == resourceVersion
}

// store caches the token of snn.
func (t *webhookTokens) store(snn types.NamespacedName, c cachedToken) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byKey[snn] = c
}
