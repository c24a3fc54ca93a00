package commitstatus

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// answerWith is a transport whose every answer has the given status and headers.
type answerWith struct {
	code   int
	header http.Header
}

func (a answerWith) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: a.code, Status: http.StatusText(a.code), Header: a.header,
		Body: io.NopCloser(strings.NewReader(`{"message":"refused"}`)), Request: req}, nil
}

// TestSecretChangeKeepsTheForgesRetryAfter: a change of the token Secret sends a refused
// state again at once, but never before the end of a rate limit's Retry-After (every Secret
// update of the management cluster reaches RetrySecret).
func TestSecretChangeKeepsTheForgesRetryAfter(t *testing.T) {
	g := NewWithT(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "forge"},
		Data: map[string][]byte{"token": []byte("tok")}}
	ref := types.NamespacedName{Namespace: "fleet", Name: "forge"}
	sendOnce := func(a answerWith) (*Reporter, contextKey) {
		r := &Reporter{Secrets: fake.NewClientBuilder().WithObjects(secret).Build(), HTTP: &http.Client{Transport: a}}
		r.init()
		r.Report(nil, NewStatus(Target{Provider: "gitea", APIURL: "https://g.example.com", Repository: "o/r", Secret: ref},
			"addon", "abc", Pending, ""))
		key, st, wait := r.due()
		g.Expect(wait).To(BeZero())
		r.send(context.Background(), key, st)
		return r, key
	}

	limited, key := sendOnce(answerWith{code: http.StatusTooManyRequests, header: http.Header{"Retry-After": {"600"}}})
	held := limited.entries[key].next
	g.Expect(held).To(BeTemporally(">", time.Now().Add(590*time.Second)))
	limited.RetrySecret(ref)
	g.Expect(limited.entries[key].next).To(Equal(held), "the Retry-After holds")

	refused, key := sendOnce(answerWith{code: http.StatusUnauthorized, header: http.Header{}})
	g.Expect(refused.entries[key].next).To(BeTemporally(">", time.Now()))
	refused.RetrySecret(ref)
	g.Expect(refused.entries[key].next).To(BeZero(), "a refused token is sent again at once")
}
