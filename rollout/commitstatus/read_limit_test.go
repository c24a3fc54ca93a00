package commitstatus

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestReadsWaitOutTheForgesRateLimit: a forge that answers a read with its rate limit is not
// asked again with that token before the limit ends, whatever commit is read; the reads fail
// at once meanwhile, and go to the forge again after. The forge here answers as GitHub
// documents its limits (a 429 with Retry-After; a 403 with no requests remaining and the
// reset's Unix time).
func TestReadsWaitOutTheForgesRateLimit(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for name, limit := range map[string]func(http.Header) int{
		"secondary, Retry-After": func(h http.Header) int {
			h.Set("Retry-After", "30")
			return http.StatusTooManyRequests
		},
		"primary, exhausted until its reset": func(h http.Header) int {
			h.Set("X-RateLimit-Remaining", "0")
			h.Set("X-RateLimit-Reset", strconv.FormatInt(now.Add(30*time.Second).Unix(), 10))
			return http.StatusForbidden
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var requests atomic.Int32
			forge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if requests.Add(1) == 1 {
					w.WriteHeader(limit(w.Header()))
					_, _ = w.Write([]byte(`{"message":"API rate limit exceeded"}`))
					return
				}
				_, _ = w.Write([]byte(`{"state":"success","total_count":1,"statuses":[{"state":"success","context":"convoy/canary/mc-1/addon","updated_at":"2026-12-02T12:00:00Z"}]}`))
			}))
			defer forge.Close()
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "forge"},
				Data: map[string][]byte{"token": []byte("tok")}}
			clock := now
			r := &Reporter{Secrets: fake.NewClientBuilder().WithObjects(secret).Build(), AllowInsecureHTTP: true,
				Now: func() time.Time { return clock }}
			target := Target{Provider: "github", APIURL: forge.URL, Repository: "o/r",
				Secret: types.NamespacedName{Namespace: "fleet", Name: "forge"}}
			read := func(commit string) ([]Observed, error) {
				return r.Read(context.Background(), target, strings.Repeat(commit, 40))
			}

			_, err := read("a")
			g.Expect(err).To(MatchError(ContainSubstring("API rate limit exceeded")))
			clock = now.Add(29 * time.Second)
			_, err = read("b")
			g.Expect(err).To(MatchError(ContainSubstring("the forge's rate limit asked to wait")))
			g.Expect(err).To(MatchError(ContainSubstring("2026-12-02T12:00:30Z")))
			g.Expect(requests.Load()).To(BeEquivalentTo(1), "no request before the limit ends")

			clock = now.Add(30 * time.Second)
			got, err := read("b")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(ConsistOf(HaveField("Context", "convoy/canary/mc-1/addon")))
			g.Expect(requests.Load()).To(BeEquivalentTo(2))
		})
	}
}

// TestReadWait reads the forges' rate-limit answers; other refusals ask no wait.
func TestReadWait(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	answer := func(code int, headers ...string) *http.Response {
		h := http.Header{}
		for i := 0; i < len(headers); i += 2 {
			h.Set(headers[i], headers[i+1])
		}
		return &http.Response{StatusCode: code, Header: h}
	}
	reset := strconv.FormatInt(now.Add(5*time.Minute).Unix(), 10)
	g.Expect(readWait(answer(http.StatusTooManyRequests, "Retry-After", "7"), now)).To(Equal(7 * time.Second))
	g.Expect(readWait(answer(http.StatusServiceUnavailable), now)).To(Equal(defaultReadHold), "no Retry-After: a minute")
	g.Expect(readWait(answer(http.StatusForbidden, "Retry-After", "60", "X-RateLimit-Remaining", "4000"), now)).To(Equal(time.Minute), "GitHub's secondary limit")
	g.Expect(readWait(answer(http.StatusForbidden, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset), now)).To(Equal(5 * time.Minute))
	g.Expect(readWait(answer(http.StatusTooManyRequests, "RateLimit-Remaining", "0", "RateLimit-Reset", reset), now)).To(Equal(5*time.Minute), "GitLab's headers")
	g.Expect(readWait(answer(http.StatusForbidden, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "99999999999"), now)).To(Equal(maxRetryAfter))
	g.Expect(readWait(answer(http.StatusForbidden, "X-RateLimit-Remaining", "12"), now)).To(BeZero(), "a forbidden token is no rate limit")
	g.Expect(readWait(answer(http.StatusNotFound), now)).To(BeZero())
}

// TestManyLongHoldsKeepTheSoonerOnesOfOthers: the holds stay bounded, and a flood of forges
// answering with hour-long limits pushes out the holds that end soonest, never all of them.
func TestManyLongHoldsKeepTheSoonerOnesOfOthers(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	r := &Reporter{Now: func() time.Time { return now }}
	github := holdKey{provider: "github", apiURL: "https://api.github.com", secret: "fleet/forge"}
	r.holdReads(github, time.Hour+time.Minute)
	for i := range maxReadHolds + 10 {
		r.holdReads(holdKey{provider: "gitea", apiURL: "https://forge.example/" + strconv.Itoa(i), secret: "tenant/forge"}, time.Hour)
	}
	g.Expect(r.reads.holds).To(HaveLen(maxReadHolds))
	_, held := r.heldUntil(github)
	g.Expect(held).To(BeTrue(), "the longest hold stays")
}
