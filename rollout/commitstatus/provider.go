package commitstatus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// tokenKey is the key of the token in the Secret.
const tokenKey = "token"

// Default API URLs.
const (
	defaultGitHubAPI = "https://api.github.com"
	defaultGitLabAPI = "https://gitlab.com/api/v4"
)

// maxErrorBody bounds what is read of a refusal's body for its message.
const maxErrorBody = 512

// InvalidError is a configuration the Reporter cannot send with (an unknown provider, an
// http:// URL carrying the token, a Secret it may not read or without the key, a forge's 4xx
// other than 408 and 429, a redirect); it is retried only every MaxBackoff, and at once when
// the GitSource points elsewhere.
type InvalidError struct{ Err error }

// Error implements error.
func (e *InvalidError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *InvalidError) Unwrap() error { return e.Err }

func invalidf(format string, args ...any) error {
	return &InvalidError{Err: fmt.Errorf(format, args...)}
}

// userAgent is the User-Agent of every request.
const userAgent = "convoy"

// post sends st to its forge: GitHub through go-github, Gitea through its SDK, GitLab with
// net/http; the token never appears in the error.
func (r *Reporter) post(ctx context.Context, st Status) error {
	token, err := r.token(ctx, st.Target)
	if err != nil {
		return err
	}
	base, err := checkedBase(st.Target, r.AllowInsecureHTTP)
	if err != nil {
		return err
	}
	if err := r.checkHost(base); err != nil {
		return err
	}
	if !usesLibrary(st.Target.Provider) {
		return r.postHTTP(ctx, st, token)
	}
	_, body, err := endpoint(st)
	if err != nil {
		return err
	}
	if st.Target.Provider == convoyv1alpha1.CommitStatusGitHub {
		return r.postGitHub(ctx, base, st, body, token)
	}
	return r.postGitea(ctx, base, st, body, token)
}

// postHTTP sends st with net/http, at the endpoint the provider documents.
func (r *Reporter) postHTTP(ctx context.Context, st Status, token string) error {
	req, err := newRequest(ctx, st, r.AllowInsecureHTTP)
	if err != nil {
		return err
	}
	setToken(req, st.Target.Provider, token)
	resp, err := r.HTTP.Do(req)
	if err != nil {
		err = fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), redactErr(err, token))
		if isRefusedAddress(err) {
			return &InvalidError{Err: err}
		}
		return &unansweredError{Err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 == 3 {
		return invalidf("%s %s: %s: redirects are not followed (the token would go with them); redirected to host %q",
			req.Method, req.URL.Redacted(), resp.Status, locationHost(resp))
	}
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	msg := strings.ReplaceAll(strings.TrimSpace(string(body)), token, "[redacted]")
	err = fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Redacted(), resp.Status, msg)
	return classifyAnswer(resp, err)
}

// classifyAnswer classifies a refusal: a 4xx other than 408 and 429 will not change by
// itself (bad token, no such repository) and is invalid; a 429 or 503 carries its Retry-After.
func classifyAnswer(resp *http.Response, err error) error {
	code := resp.StatusCode
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		return &retryAfterError{Err: err, After: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	case code/100 == 4 && code != http.StatusRequestTimeout:
		return &InvalidError{Err: err}
	}
	return err
}

// unansweredError is a request its host did not answer (refused, timed out, reset): the host
// is backed off as a whole.
type unansweredError struct{ Err error }

func (e *unansweredError) Error() string { return e.Err.Error() }
func (e *unansweredError) Unwrap() error { return e.Err }

// isUnanswered reports whether err is a request its host did not answer.
func isUnanswered(err error) bool {
	var u *unansweredError
	return errors.As(err, &u)
}

// hostOf returns the API host of t, "" when its URL is invalid.
func hostOf(t Target) string {
	u, err := apiBase(t)
	if err != nil {
		return ""
	}
	return u.Host
}

// maxRetryAfter bounds the wait a forge's Retry-After can ask for.
const maxRetryAfter = time.Hour

// retryAfterError is a refusal that says when to try again.
type retryAfterError struct {
	Err   error
	After time.Duration
}

func (e *retryAfterError) Error() string { return e.Err.Error() }
func (e *retryAfterError) Unwrap() error { return e.Err }

// retryAfterOf returns the wait err's forge asked for, 0 when it asked none.
func retryAfterOf(err error) time.Duration {
	var ra *retryAfterError
	if errors.As(err, &ra) {
		return ra.After
	}
	return 0
}

// parseRetryAfter reads a Retry-After header, in seconds or an HTTP date, bounded by
// maxRetryAfter; 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.Atoi(v); err == nil {
		d = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = at.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// locationHost returns the host a redirect points to, never its path or query (which might
// carry a token), or "" when it has none.
func locationHost(resp *http.Response) string {
	loc, err := resp.Location()
	if err != nil {
		return ""
	}
	return loc.Host
}

// noRedirect makes a client return a redirect as the response instead of following it: a
// followed redirect would carry the token to another host, or over http://.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// token reads the token of target's Secret.
func (r *Reporter) token(ctx context.Context, target Target) (string, error) {
	secret := &corev1.Secret{}
	if err := r.Secrets.Get(ctx, target.Secret, secret); err != nil {
		return "", secretReadError(target, err)
	}
	if err := checkSecretType(target, secret); err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(secret.Data[tokenKey]))
	if token == "" {
		return "", invalidf("Secret %s of spec.commitStatus.secretRef has no key %q", target.Secret, tokenKey)
	}
	return token, nil
}

// secretReadError classifies a failed read of the token Secret: a missing Secret may be
// created any moment and an API server's hiccup passes, so both are retried with backoff (a
// final state must not be lost to one failed read); a refused read (forbidden, bad name) is
// invalid.
func secretReadError(target Target, err error) error {
	err = fmt.Errorf("GitSource %s/%s: reading Secret %s of spec.commitStatus.secretRef: %w",
		target.Secret.Namespace, target.Source, target.Secret, err)
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsInvalid(err) {
		return &InvalidError{Err: err}
	}
	return err
}

// checkSecretType refuses a Secret that was not made to hold a forge token. Whoever may edit
// a GitSource chooses both the API URL and the Secret, so a Secret of another type (a
// service account's token above all, which has a "token" key too) would be sent to any URL.
func checkSecretType(target Target, secret *corev1.Secret) error {
	if secret.Type == "" || secret.Type == corev1.SecretTypeOpaque {
		return nil
	}
	return invalidf("GitSource %s/%s: Secret %s of spec.commitStatus.secretRef has type %s; "+
		"a commit status token must be in a Secret of type Opaque", target.Secret.Namespace, target.Source,
		target.Secret, secret.Type)
}

// newRequest builds the provider's documented request for st, without its token.
func newRequest(ctx context.Context, st Status, allowHTTP bool) (*http.Request, error) {
	base, err := checkedBase(st.Target, allowHTTP)
	if err != nil {
		return nil, err
	}
	path, body, err := endpoint(st)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	u := base.JoinPath(path...)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	return req, nil
}

// checkedBase returns t's API base URL, refusing http:// unless allowHTTP.
func checkedBase(t Target, allowHTTP bool) (*url.URL, error) {
	base, err := apiBase(t)
	if err != nil {
		return nil, err
	}
	if base.Scheme == "http" && !allowHTTP {
		return nil, invalidf("spec.commitStatus.apiURL %s is refused: the token would be sent in clear over http://; use https:// (allowed only with the controller flag --commit-status-allow-insecure-http)", base.Redacted())
	}
	return base, nil
}

// apiBase returns the API's base URL: the configured one, else the provider's public one.
func apiBase(t Target) (*url.URL, error) {
	raw := strings.TrimSuffix(t.APIURL, "/")
	switch {
	case raw != "":
	case t.Provider == convoyv1alpha1.CommitStatusGitHub:
		raw = defaultGitHubAPI
	case t.Provider == convoyv1alpha1.CommitStatusGitLab:
		raw = defaultGitLabAPI
	default:
		return nil, invalidf("spec.commitStatus.apiURL is required for provider %q", t.Provider)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, invalidf("spec.commitStatus.apiURL %q is not an http(s) URL", t.APIURL)
	}
	// Note: the client libraries build the request URL from this base, and go-github prints
	// it whole, user:password included, in the error of a refused request (which reaches
	// events and logs); a query or fragment would swallow Gitea's path.
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, invalidf("spec.commitStatus.apiURL %s is refused: it must have no user:password, "+
			"query or fragment (the token goes in spec.commitStatus.secretRef)", (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String())
	}
	return u, nil
}

// endpoint returns the path segments under the API base and the JSON body of st's provider:
//   - GitHub: POST /repos/{owner}/{repo}/statuses/{sha} {state, target_url, description, context}
//     (state: pending, success, failure, error);
//   - Gitea: POST /api/v1/repos/{owner}/{repo}/statuses/{sha}, the same body;
//   - GitLab: POST /projects/{id}/statuses/{sha} {state, name, target_url, description}
//     (state: pending, running, success, failed, canceled; the id is the URL-encoded path).
//
// See forgeState and gitLabState for how convoy's states map to each forge's.
func endpoint(st Status) ([]string, map[string]string, error) {
	body := map[string]string{"description": st.Description}
	if link := st.link(st.name()); link != "" {
		body["target_url"] = link
	}
	switch st.Target.Provider {
	case convoyv1alpha1.CommitStatusGitHub, convoyv1alpha1.CommitStatusGitea:
		owner, repo, ok := strings.Cut(st.Target.Repository, "/")
		if !ok || !validSegment(owner) || !validSegment(repo) {
			return nil, nil, invalidf("spec.commitStatus.repository %q must be owner/name, each of [A-Za-z0-9_.-]+ and neither . nor ..",
				st.Target.Repository)
		}
		body["state"], body["context"] = forgeState(st.Target.Provider, st.State), st.Context
		path := []string{"repos", owner, repo, "statuses", st.Commit}
		if st.Target.Provider == convoyv1alpha1.CommitStatusGitea {
			path = append([]string{"api", "v1"}, path...)
		}
		return path, body, nil
	case convoyv1alpha1.CommitStatusGitLab:
		if !validProject(st.Target.Repository) {
			return nil, nil, invalidf("spec.commitStatus.repository %q must be a project id or a group/project path, "+
				"each segment of [A-Za-z0-9_.-]+ and neither . nor ..", st.Target.Repository)
		}
		body["state"], body["name"] = gitLabState(st.State), st.Context
		return []string{"projects", url.PathEscape(st.Target.Repository), "statuses", st.Commit}, body, nil
	}
	return nil, nil, invalidf("spec.commitStatus.provider %q is not github, gitlab or gitea", st.Target.Provider)
}

// segmentPattern is what an owner, repository, group or project name may be on any forge.
var segmentPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// validSegment reports whether s is one path segment that cannot walk the API's path.
func validSegment(s string) bool {
	return s != "." && s != ".." && segmentPattern.MatchString(s)
}

// validProject reports whether s is a GitLab project id or path: segments separated by "/".
func validProject(s string) bool {
	for seg := range strings.SplitSeq(s, "/") {
		if !validSegment(seg) {
			return false
		}
	}
	return true
}

// gitLabState maps a state to GitLab's: a rollout in progress is "running", a superseded one
// "canceled".
func gitLabState(s State) string {
	switch s {
	case Pending:
		return "running"
	case Failure:
		return "failed"
	case Superseded:
		return "canceled"
	}
	return string(s)
}

// forgeState maps a state to GitHub's (pending, success, failure, error) or Gitea's (those
// and warning, skipped). Neither has a cancelled state: a superseded rollout is GitHub's
// "error" (the rollout did not end, rather than failed) and Gitea's "warning".
func forgeState(provider string, s State) string {
	switch {
	case s != Superseded:
		return string(s)
	case provider == convoyv1alpha1.CommitStatusGitea:
		return "warning"
	}
	return "error"
}

// setToken authenticates req as the provider documents: GitLab's PRIVATE-TOKEN header,
// GitHub's and Gitea's Authorization header.
func setToken(req *http.Request, provider, token string) {
	switch provider {
	case convoyv1alpha1.CommitStatusGitLab:
		req.Header.Set("PRIVATE-TOKEN", token)
	case convoyv1alpha1.CommitStatusGitea:
		req.Header.Set("Authorization", "token "+token)
	default:
		req.Header.Set("Authorization", "Bearer "+token)
	}
}

// redactErr removes the token from a transport error's text, should it ever appear.
func redactErr(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return fmt.Errorf("%s", strings.ReplaceAll(err.Error(), token, "[redacted]"))
}
