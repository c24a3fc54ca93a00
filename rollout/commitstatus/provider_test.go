package commitstatus

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestRequestShapes checks each provider's documented endpoint, body and state names.
func TestRequestShapes(t *testing.T) {
	cases := []struct {
		name       string
		target     Target
		state      State
		url        string
		body       map[string]string
		authHeader string
	}{
		{name: "github", target: Target{Provider: "github", Repository: "fleet/addons", TargetURL: "https://dash.example.com/{name}?c={commit}"},
			state: Pending, url: "https://api.github.com/repos/fleet/addons/statuses/abc",
			body: map[string]string{"state": "pending", "context": "convoy/addon", "description": "1/3 partitions, 2/9 clusters",
				"target_url": "https://dash.example.com/addon?c=abc"}},
		{name: "github enterprise", target: Target{Provider: "github", APIURL: "https://ghe.example.com/api/v3/", Repository: "o/r"},
			state: Failure, url: "https://ghe.example.com/api/v3/repos/o/r/statuses/abc",
			body: map[string]string{"state": "failure", "context": "convoy/addon", "description": "1/3 partitions, 2/9 clusters"}},
		{name: "gitlab", target: Target{Provider: "gitlab", Repository: "group/sub/addons"},
			state: Pending, url: "https://gitlab.com/api/v4/projects/group%2Fsub%2Faddons/statuses/abc",
			body: map[string]string{"state": "running", "name": "convoy/addon", "description": "1/3 partitions, 2/9 clusters"}},
		{name: "gitlab failure", target: Target{Provider: "gitlab", APIURL: "https://git.example.com/api/v4", Repository: "42"},
			state: Failure, url: "https://git.example.com/api/v4/projects/42/statuses/abc",
			body: map[string]string{"state": "failed", "name": "convoy/addon", "description": "1/3 partitions, 2/9 clusters"}},
		{name: "gitea", target: Target{Provider: "gitea", APIURL: "https://gitea.example.com", Repository: "o/r"},
			state: Success, url: "https://gitea.example.com/api/v1/repos/o/r/statuses/abc",
			body: map[string]string{"state": "success", "context": "convoy/addon", "description": "1/3 partitions, 2/9 clusters",
				"target_url": ""}}, // the SDK always sends target_url
		{name: "github superseded", target: Target{Provider: "github", Repository: "o/r"},
			state: Superseded, url: "https://api.github.com/repos/o/r/statuses/abc",
			body: map[string]string{"state": "error", "context": "convoy/addon", "description": "1/3 partitions, 2/9 clusters"}},
		{name: "gitlab superseded", target: Target{Provider: "gitlab", Repository: "42"},
			state: Superseded, url: "https://gitlab.com/api/v4/projects/42/statuses/abc",
			body: map[string]string{"state": "canceled", "name": "convoy/addon", "description": "1/3 partitions, 2/9 clusters"}},
		{name: "gitea superseded", target: Target{Provider: "gitea", APIURL: "https://gitea.example.com", Repository: "o/r"},
			state: Superseded, url: "https://gitea.example.com/api/v1/repos/o/r/statuses/abc",
			body: map[string]string{"state": "warning", "context": "convoy/addon", "description": "1/3 partitions, 2/9 clusters",
				"target_url": ""}},
	}
	auth := map[string][2]string{"github": {"Authorization", "Bearer tok"}, "gitea": {"Authorization", "token tok"},
		"gitlab": {"Private-Token", "tok"}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			st := NewStatus(tc.target, "addon", "abc", tc.state, Progress(1, 3, 2, 9))
			req, raw, err := capture(st)
			g.Expect(err).To(HaveOccurred(), "the capturing transport answers nothing")
			g.Expect(req).NotTo(BeNil())
			g.Expect(req.Method).To(Equal("POST"))
			g.Expect(req.URL.String()).To(Equal(tc.url))
			g.Expect(req.Header.Get(auth[tc.target.Provider][0])).To(Equal(auth[tc.target.Provider][1]))
			g.Expect(req.Header.Get("User-Agent")).To(Equal("convoy"))
			body := map[string]string{}
			g.Expect(json.Unmarshal(raw, &body)).To(Succeed())
			g.Expect(body).To(Equal(tc.body))
		})
	}
}

// capture sends st through the Reporter's post (the client libraries for GitHub and Gitea,
// net/http for GitLab) over a transport that records the request and answers nothing; it
// returns the request (nil when none left), its body and post's error.
func capture(st Status) (*http.Request, []byte, error) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "forge"},
		Data: map[string][]byte{"token": []byte("tok")}}
	rec := &recorder{}
	r := &Reporter{Secrets: fake.NewClientBuilder().WithObjects(secret).Build(), HTTP: &http.Client{Transport: rec}}
	r.init()
	st.Target.Secret = types.NamespacedName{Namespace: "fleet", Name: "forge"}
	err := r.post(context.Background(), st)
	return rec.req, rec.body, err
}

// recorder is a transport that keeps the request it is given and answers none.
type recorder struct {
	req  *http.Request
	body []byte
}

func (c *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	c.req = req
	if req.Body != nil {
		c.body, _ = io.ReadAll(req.Body)
	}
	return nil, errors.New("not sent: captured")
}

// TestRequestRefusals checks that a configuration that cannot be sent names the field and the
// rule, and is not retried.
func TestRequestRefusals(t *testing.T) {
	g := NewWithT(t)
	cases := map[string]Target{
		"token would be sent in clear over http://": {Provider: "gitea", APIURL: "http://gitea.example.com", Repository: "o/r"},
		"repository \"addons\" must be owner/name":  {Provider: "github", Repository: "addons"},
		"apiURL is required for provider \"gitea\"": {Provider: "gitea", Repository: "o/r"},
		"repository \"o/..\" must be owner/name, each of [A-Za-z0-9_.-]+": {Provider: "gitea", APIURL: "https://g.example.com",
			Repository: "o/.."},
		"repository \"../admin\" must be owner/name":              {Provider: "github", Repository: "../admin"},
		"repository \"o/r?x=1\" must be owner/name":               {Provider: "github", Repository: "o/r?x=1"},
		"repository \"group/../other\" must be a project id or a": {Provider: "gitlab", Repository: "group/../other"},
		"repository \"group//p\" must be a project id or a":       {Provider: "gitlab", Repository: "group//p"},
		"apiURL https://ghe.example.com/api/v3 is refused: it must have no user:password": {Provider: "github",
			APIURL: "https://x-access:hunter2@ghe.example.com/api/v3", Repository: "o/r"},
		"apiURL https://g.example.com is refused: it must have no user:password, query": {Provider: "gitea",
			APIURL: "https://g.example.com?x=/", Repository: "o/r"},
		"apiURL https://g.example.com is refused: it must have no user:password, query or fragment": {Provider: "gitea",
			APIURL: "https://g.example.com#x", Repository: "o/r"},
	}
	for want, target := range cases {
		req, _, err := capture(NewStatus(target, "addon", "abc", Pending, ""))
		g.Expect(err).To(MatchError(ContainSubstring(want)))
		g.Expect(outcomeOf(err)).To(Equal(OutcomeInvalid))
		g.Expect(req).To(BeNil(), "nothing is sent")
		g.Expect(err.Error()).NotTo(ContainSubstring("hunter2"), "the password in apiURL is never printed")
	}
}

// TestDescriptionIsCut checks GitHub's 140-character limit.
func TestDescriptionIsCut(t *testing.T) {
	g := NewWithT(t)
	long := NewStatus(Target{}, "a", "c", Failure, string(make([]rune, 500)))
	g.Expect([]rune(long.Description)).To(HaveLen(maxDescription))
}

// TestRetryAfter checks the two forms of Retry-After and its bounds.
func TestRetryAfter(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	g.Expect(parseRetryAfter("", now)).To(BeZero())
	g.Expect(parseRetryAfter("soon", now)).To(BeZero())
	g.Expect(parseRetryAfter("7", now)).To(Equal(7 * time.Second))
	g.Expect(parseRetryAfter("-3", now)).To(BeZero())
	g.Expect(parseRetryAfter("999999", now)).To(Equal(maxRetryAfter))
	g.Expect(parseRetryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now)).To(Equal(90 * time.Second))
}

// TestGitHubRateLimitsAreWaitedOut classifies go-github's rate-limit errors: a 403 of an
// exhausted primary limit waits until its reset and a secondary limit its Retry-After, both
// retried as errors, where any other 403 is held as invalid.
func TestGitHubRateLimitsAreWaitedOut(t *testing.T) {
	g := NewWithT(t)
	req, err := http.NewRequest(http.MethodPost, "https://api.github.com/repos/o/r/statuses/abc", nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp := &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Header: http.Header{}, Request: req}
	primary := &github.RateLimitError{Response: resp, Message: "API rate limit exceeded",
		Rate: github.Rate{Reset: github.Timestamp{Time: time.Now().Add(10 * time.Minute)}}}
	waited := classifyLibrary(gitHubRetryAfter(primary), resp, "POST statuses", "tok")
	g.Expect(outcomeOf(waited)).To(Equal(OutcomeError))
	g.Expect(retryAfterOf(waited)).To(BeNumerically("~", 10*time.Minute, 5*time.Second))
	secondary := &github.AbuseRateLimitError{Response: resp, Message: "secondary rate limit",
		RetryAfter: github.Ptr(30 * time.Second)}
	waited = classifyLibrary(gitHubRetryAfter(secondary), resp, "POST statuses", "tok")
	g.Expect(retryAfterOf(waited)).To(Equal(30 * time.Second))
	refused := classifyLibrary(gitHubRetryAfter(&github.ErrorResponse{Response: resp, Message: "Resource not accessible"}),
		resp, "POST statuses", "tok")
	g.Expect(outcomeOf(refused)).To(Equal(OutcomeInvalid))
	g.Expect(refused).To(MatchError(ContainSubstring("403 Forbidden: POST")))
}
