package checks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// The http kind: an HTTP endpoint asked about the partition.
func init() {
	Register(Kind[convoyv1alpha1.HTTPCheck]{
		Name:      "http",
		Field:     func(c *convoyv1alpha1.RolloutCheck) *convoyv1alpha1.HTTPCheck { return c.HTTP },
		Spec:      func(h *convoyv1alpha1.HTTPCheck) Spec { return &HTTPCheck{URL: h.URL, Timeout: h.Timeout()} },
		SecretRef: func(h *convoyv1alpha1.HTTPCheck) *convoyv1alpha1.SecretReference { return h.SecretRef },
		Address:   func(h *convoyv1alpha1.HTTPCheck) (string, string) { return "http.url", h.URL },
		Subject:   func(h *convoyv1alpha1.HTTPCheck) string { return "POST " + h.URL },
	})
}

// HTTPCheck posts the partition as JSON to a URL; a 2xx answer passes.
type HTTPCheck struct {
	// URL is the endpoint, http or https.
	URL string
	// Timeout bounds the request; zero means DefaultHTTPTimeout, and it is at most
	// MaxHTTPTimeout.
	Timeout time.Duration
}

// Bounds of an HTTP check.
const (
	// DefaultHTTPTimeout is an HTTP check's timeout when it states none.
	DefaultHTTPTimeout = 10 * time.Second
	// MaxHTTPTimeout bounds an HTTP check's timeout.
	MaxHTTPTimeout = 60 * time.Second
	// MaxHTTPBody bounds what is read of an HTTP check's answer.
	MaxHTTPBody = 64 << 10
)

// httpCheck is a compiled HTTPCheck.
type httpCheck struct {
	url     *url.URL
	timeout time.Duration
}

// Compile validates the check: its URL and its timeout.
func (h *HTTPCheck) Compile() (Evaluator, error) {
	u, err := parseAddress("http.url", h.URL)
	if err != nil {
		return nil, err
	}
	timeout := h.Timeout
	switch {
	case timeout < 0:
		return nil, specError("http.timeoutSeconds", "must not be negative", nil)
	case timeout == 0:
		timeout = DefaultHTTPTimeout
	case timeout > MaxHTTPTimeout:
		return nil, specError("http.timeoutSeconds", fmt.Sprintf("must be at most %s", MaxHTTPTimeout), nil)
	}
	return &httpCheck{url: u, timeout: timeout}, nil
}

// payload is the JSON an HTTP check posts.
type payload struct {
	HostedClusterPackage string           `json:"hostedClusterPackage"`
	Partition            string           `json:"partition"`
	Revision             string           `json:"revision"`
	Commit               string           `json:"commit"`
	HostedClusters       []payloadCluster `json:"hostedClusters"`
}

// payloadCluster is a HostedCluster in the payload.
type payloadCluster struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels"`
}

// newPayload returns the payload of data.
func newPayload(data Data) payload {
	p := payload{HostedClusterPackage: data.HostedClusterPackage, Partition: data.Partition,
		Revision: data.Revision, Commit: data.Commit, HostedClusters: []payloadCluster{}}
	for _, c := range data.HostedClusters {
		labels := c.Labels
		if labels == nil {
			labels = map[string]string{}
		}
		p.HostedClusters = append(p.HostedClusters, payloadCluster{Name: c.Name, Namespace: c.Namespace, Labels: labels})
	}
	return p
}

// Describe names the URL the check posts to.
func (h *httpCheck) Describe() string { return "POST " + redactURL(h.url) }

// Timeout is the check's timeout.
func (h *httpCheck) Timeout() time.Duration { return h.timeout }

// Evaluate posts the partition and judges the status: 2xx passes, a redirect or any other
// status fails, no answer in time or a transport error is inconclusive. It never returns an
// error: the payload holds no template.
func (h *httpCheck) Evaluate(ctx context.Context, in Input) (Evaluation, error) {
	return h.post(ctx, in), nil
}

// post posts the partition and judges the answer (see Evaluate).
func (h *httpCheck) post(ctx context.Context, in Input) Evaluation {
	target := redactURL(h.url)
	body, err := json.Marshal(newPayload(in.Data))
	if err != nil {
		return inconclusive("POST %s: encoding the payload: %v", target, err)
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url.String(), bytes.NewReader(body))
	if err != nil {
		return inconclusive("POST %s: %v", target, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := do(ctx, req, in)
	if err != nil {
		return inconclusive("POST %s: %v", target, err)
	}
	defer func() { _ = resp.Body.Close() }()
	answer, readErr := io.ReadAll(io.LimitReader(resp.Body, MaxHTTPBody))
	answer = scrubBytes(answer, in.Credentials)
	value := fmt.Sprintf("HTTP %d", resp.StatusCode)
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return Evaluation{Outcome: Failure, Value: value,
			Message: fmt.Sprintf("POST %s answered %s, a redirect to %s; redirects are not followed", target, resp.Status, redirectHost(h.url, resp))}
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		return Evaluation{Outcome: Failure, Value: value,
			Message: fmt.Sprintf("POST %s answered %s: %s", target, resp.Status, sample(answer))}
	case readErr != nil && !errors.Is(readErr, io.EOF):
		return inconclusive("POST %s answered %s but its body broke off: %v", target, resp.Status, transportError(ctx, readErr))
	}
	return Evaluation{Outcome: Success, Value: value, Message: fmt.Sprintf("POST %s answered %s", target, resp.Status)}
}

// redirectHost names the host a redirect points at: the Location's host, the check's own host
// for a relative Location, or what is wrong with it.
func redirectHost(base *url.URL, resp *http.Response) string {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "no Location"
	}
	u, err := base.Parse(loc)
	if err != nil {
		return "an invalid Location"
	}
	if u.Host == base.Host {
		return "the same host " + u.Host
	}
	return "the host " + u.Host
}
