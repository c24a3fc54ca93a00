package commitstatus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"code.gitea.io/sdk/gitea"
	"github.com/google/go-github/v84/github"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// maxAnswer bounds what a client library may read of any answer (a status is about 2 KiB).
const maxAnswer = 64 << 10

// postGitHub sends st with go-github. Its client is a copy of r.HTTP (redirects not
// followed), the token goes in its transport to apiURL only, and it neither retries nor
// times out by itself.
func (r *Reporter) postGitHub(ctx context.Context, base *url.URL, st Status, body map[string]string, token string) error {
	gh := github.NewClient(r.HTTP).WithAuthToken(token)
	gh.BaseURL = base.JoinPath("/")
	gh.UserAgent = userAgent
	owner, repo, _ := strings.Cut(st.Target.Repository, "/")
	status := github.RepoStatus{State: github.Ptr(body["state"]), Description: github.Ptr(body["description"]),
		Context: github.Ptr(body["context"])}
	if link := body["target_url"]; link != "" {
		status.TargetURL = github.Ptr(link)
	}
	_, resp, err := gh.Repositories.CreateStatus(ctx, owner, repo, st.Commit, status)
	var answer *http.Response
	if resp != nil {
		answer = resp.Response
	}
	return classifyLibrary(gitHubRetryAfter(err), answer, "POST "+gh.BaseURL.Redacted()+"repos/"+st.Target.Repository+
		"/statuses/"+st.Commit, token)
}

// gitHubRetryAfter turns go-github's rate-limit errors (a 403 or 429 with the primary limit's
// reset time, or the secondary limit's Retry-After) into a retryAfterError.
func gitHubRetryAfter(err error) error {
	var primary *github.RateLimitError
	var secondary *github.AbuseRateLimitError
	switch {
	case errors.As(err, &primary):
		return &retryAfterError{Err: err, After: min(max(time.Until(primary.Rate.Reset.Time), firstBackoff), maxRetryAfter)}
	case errors.As(err, &secondary) && secondary.RetryAfter != nil:
		return &retryAfterError{Err: err, After: min(max(*secondary.RetryAfter, firstBackoff), maxRetryAfter)}
	}
	return err
}

// postGitea sends st with Gitea's SDK, its version query turned off (SetGiteaVersion("")):
// one request per status, on r.HTTP.
func (r *Reporter) postGitea(ctx context.Context, base *url.URL, st Status, body map[string]string, token string) error {
	c, err := gitea.NewClient(base.String(), gitea.SetHTTPClient(r.HTTP), gitea.SetToken(token),
		gitea.SetGiteaVersion(""), gitea.SetContext(ctx), gitea.SetUserAgent(userAgent))
	if err != nil {
		return invalidf("spec.commitStatus.apiURL %s: %v", base.Redacted(), err)
	}
	owner, repo, _ := strings.Cut(st.Target.Repository, "/")
	_, resp, err := c.CreateStatus(owner, repo, st.Commit, gitea.CreateStatusOption{State: gitea.StatusState(body["state"]),
		TargetURL: body["target_url"], Description: body["description"], Context: body["context"]})
	var answer *http.Response
	if resp != nil {
		answer = resp.Response
	}
	return classifyLibrary(err, answer, "POST "+base.Redacted()+"/api/v1/repos/"+st.Target.Repository+"/statuses/"+st.Commit,
		token)
}

// classifyLibrary classifies a client library's outcome as postHTTP does its own: no answer is
// unanswered (the host is backed off), a 2xx is sent, a redirect is invalid (never followed), a
// rate limit keeps its wait, other refusals go through classifyAnswer. The library's error
// text is kept on one line, without the token.
func classifyLibrary(err error, resp *http.Response, what, token string) error {
	msg := strings.Join(strings.Fields(fmt.Sprint(err)), " ")
	if token != "" {
		msg = strings.ReplaceAll(msg, token, "[redacted]")
	}
	switch {
	case resp == nil && err == nil:
		return nil
	case resp == nil && isRefusedAddress(err):
		return invalidf("%s: %s", what, msg)
	case resp == nil:
		return &unansweredError{Err: fmt.Errorf("%s: %s", what, msg)}
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode/100 == 3:
		return invalidf("%s: %s: redirects are not followed (the token would go with them); redirected to host %q",
			what, resp.Status, locationHost(resp))
	}
	wrapped := fmt.Errorf("%s: %s: %s", what, resp.Status, msg)
	if after := retryAfterOf(err); after > 0 {
		return &retryAfterError{Err: wrapped, After: after}
	}
	return classifyAnswer(resp, wrapped)
}

// boundedTransport bounds every answer's body: a send's to maxAnswer (the client libraries
// read a refusal's body whole), a read's page of statuses to maxReadAnswer.
type boundedTransport struct{ next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	limit := int64(maxAnswer)
	if req.Method == http.MethodGet {
		limit = maxReadAnswer
	}
	if resp != nil && resp.Body != nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, limit), resp.Body}
	}
	return resp, err
}

// usesLibrary reports whether provider is sent through its client library (GitLab is not:
// its client pulls in protovalidate, graphql, keyring and dbus for one POST).
func usesLibrary(provider string) bool {
	return provider == convoyv1alpha1.CommitStatusGitHub || provider == convoyv1alpha1.CommitStatusGitea
}
