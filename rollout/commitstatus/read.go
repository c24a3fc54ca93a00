package commitstatus

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Observed is the latest status of one context on a commit, as its forge shows it.
type Observed struct {
	Context string
	// State is convoy's state of the forge's: pending (GitLab's running and created too),
	// success, failure (GitLab's failed), superseded (GitHub's error, Gitea's warning,
	// GitLab's canceled); "" for any other.
	State       State
	Description string
	// At is when the forge last changed the context: its own clock, not the poster's.
	At time.Time
}

// Reading bounds: a commit's statuses are read a page of maxPerPage at a time (the most
// GitHub serves; Gitea serves at most its own MAX_RESPONSE_ITEMS, 50 by default, and the next
// page then holds the rest), at most maxPages pages, each answer at most maxReadAnswer bytes. A
// commit with more contexts than that is an error, so that a status that could not be read is
// never taken for one that was not posted.
const (
	maxPerPage    = 100
	maxPages      = 20
	maxReadAnswer = 1 << 20
)

// DefaultReadTTL is how long a commit's statuses read from its forge are served again: the
// passes of every HostedClusterPackage on one repository share one read per commit. A minute
// keeps a management cluster of tens of add-ons, tens of upstream management clusters and a few
// commits behind within GitHub's 5,000 requests an hour.
const DefaultReadTTL = time.Minute

// readCache is what Read remembers: by target and commit, the statuses and when they were read.
type readCache struct {
	mu      sync.Mutex
	entries map[readKey]readEntry
}

type readKey struct {
	provider, apiURL, repository, commit string
}

type readEntry struct {
	statuses []Observed
	at       time.Time
}

// maxCachedCommits bounds the cache; past it, entries older than the TTL are dropped first,
// then all.
const maxCachedCommits = 4096

// Read returns the latest status of every context on commit in target's repository, read
// with target's token under the Reporter's rules (Opaque Secret, https unless allowed, the
// address policy, no redirect, bounded answers, the token in no error). A read younger than ReadTTL is served
// again. Unlike Report it waits for the forge, within Timeout.
func (r *Reporter) Read(ctx context.Context, target Target, commit string) ([]Observed, error) {
	r.init()
	key := readKey{provider: target.Provider, apiURL: target.APIURL, repository: target.Repository, commit: commit}
	if got, ok := r.cached(key); ok {
		return got, nil
	}
	base, err := checkedBase(target, r.AllowInsecureHTTP)
	if err != nil {
		return nil, err
	}
	if err := r.checkHost(base); err != nil {
		return nil, err
	}
	token, err := r.token(ctx, target)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	var out []Observed
	for page := 1; ; page++ {
		got, more, err := r.readPage(ctx, target, commit, token, page)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		if !more {
			break
		}
		if page == maxPages {
			return nil, fmt.Errorf("commit %s has more than %d status contexts in %s %s: too many to read them all",
				commit, maxPages*maxPerPage, target.Provider, target.Repository)
		}
	}
	r.remember(key, out)
	return out, nil
}

// readPage reads one page of commit's latest statuses; more reports a full page.
func (r *Reporter) readPage(ctx context.Context, target Target, commit, token string, page int) ([]Observed, bool, error) {
	u, err := statusesURL(target, commit, r.AllowInsecureHTTP, page)
	if err != nil {
		return nil, false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	setToken(req, target.Provider, token)
	resp, err := r.HTTP.Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("GET %s: %w", u.Redacted(), redactErr(err, token))
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		msg := strings.ReplaceAll(strings.TrimSpace(string(body)), token, "[redacted]")
		if resp.StatusCode/100 == 3 {
			msg = fmt.Sprintf("redirects are not followed (the token would go with them); redirected to host %q", locationHost(resp))
		}
		return nil, false, fmt.Errorf("GET %s: %s: %s", u.Redacted(), resp.Status, msg)
	}
	got, n, err := decodeStatuses(target.Provider, resp.Body)
	if err != nil {
		return nil, false, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	return got, n > 0 && n >= pageSize(target.Provider), nil
}

// statusesURL is the documented endpoint of a commit's latest status per context:
//   - GitHub: GET /repos/{owner}/{repo}/commits/{sha}/status (the combined status);
//   - Gitea: GET /api/v1/repos/{owner}/{repo}/commits/{sha}/status, the same;
//   - GitLab: GET /projects/{id}/repository/commits/{sha}/statuses (latest per name unless
//     all=true).
func statusesURL(t Target, commit string, allowHTTP bool, page int) (*url.URL, error) {
	base, err := checkedBase(t, allowHTTP)
	if err != nil {
		return nil, err
	}
	// endpoint validates the repository and the commit as a POST would.
	path, _, err := endpoint(Status{Target: t, Commit: commit})
	if err != nil {
		return nil, err
	}
	q := url.Values{"page": {strconv.Itoa(page)}}
	switch t.Provider {
	case convoyv1alpha1.CommitStatusGitLab:
		path = []string{"projects", path[1], "repository", "commits", commit, "statuses"}
		q.Set("per_page", strconv.Itoa(maxPerPage))
	case convoyv1alpha1.CommitStatusGitea:
		path = append(path[:len(path)-2], "commits", commit, "status")
		q.Set("limit", strconv.Itoa(pageSize(t.Provider)))
	default:
		path = append(path[:len(path)-2], "commits", commit, "status")
		q.Set("per_page", strconv.Itoa(maxPerPage))
	}
	u := base.JoinPath(path...)
	u.RawQuery = q.Encode()
	return u, nil
}

// pageSize is the statuses a full page of provider holds: Gitea caps its pages at 50 unless
// configured otherwise, so a page of 50 is asked for and a full one means more may follow.
func pageSize(provider string) int {
	if provider == convoyv1alpha1.CommitStatusGitea {
		return 50
	}
	return maxPerPage
}

// wireStatus is one status as any of the three forges sends it: GitHub's state, Gitea's
// status (or state), GitLab's status and name.
type wireStatus struct {
	State       string    `json:"state"`
	Status      string    `json:"status"`
	Context     string    `json:"context"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	FinishedAt  time.Time `json:"finished_at"`
}

// decodeStatuses reads one page of statuses: GitHub's and Gitea's combined status object, or
// GitLab's array. It returns the statuses and how many the page held.
func decodeStatuses(provider string, body io.Reader) ([]Observed, int, error) {
	var wire []wireStatus
	dec := json.NewDecoder(body)
	if provider == convoyv1alpha1.CommitStatusGitLab {
		if err := dec.Decode(&wire); err != nil {
			return nil, 0, fmt.Errorf("reading the statuses: %w", err)
		}
	} else {
		var combined struct {
			Statuses []wireStatus `json:"statuses"`
		}
		if err := dec.Decode(&combined); err != nil {
			return nil, 0, fmt.Errorf("reading the combined status: %w", err)
		}
		wire = combined.Statuses
	}
	out := make([]Observed, 0, len(wire))
	for _, w := range wire {
		out = append(out, w.observed(provider))
	}
	return out, len(wire), nil
}

// observed maps a forge's status to convoy's words.
func (w wireStatus) observed(provider string) Observed {
	o := Observed{Context: w.Context, Description: w.Description, At: w.UpdatedAt}
	state := w.State
	if provider != convoyv1alpha1.CommitStatusGitHub && w.Status != "" {
		state = w.Status
	}
	if provider == convoyv1alpha1.CommitStatusGitLab {
		o.Context, o.At = w.Name, latest(w.CreatedAt, w.FinishedAt)
	}
	if o.At.IsZero() {
		o.At = w.CreatedAt
	}
	switch state {
	case "pending", "running", "created":
		o.State = Pending
	case "success":
		o.State = Success
	case "failure", "failed":
		o.State = Failure
	case "error", "warning", "canceled":
		o.State = Superseded
	}
	return o
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// ReadInterval is how long a read is served again: ReadTTL, else DefaultReadTTL.
func (r *Reporter) ReadInterval() time.Duration {
	return orDefault(r.ReadTTL, DefaultReadTTL)
}

// cached returns a read of key younger than the TTL.
func (r *Reporter) cached(key readKey) ([]Observed, bool) {
	r.reads.mu.Lock()
	defer r.reads.mu.Unlock()
	e, ok := r.reads.entries[key]
	if !ok || r.now().Sub(e.at) >= r.ReadInterval() {
		return nil, false
	}
	return e.statuses, true
}

// remember keeps a read, within maxCachedCommits.
func (r *Reporter) remember(key readKey, statuses []Observed) {
	r.reads.mu.Lock()
	defer r.reads.mu.Unlock()
	now := r.now()
	if r.reads.entries == nil {
		r.reads.entries = map[readKey]readEntry{}
	}
	if len(r.reads.entries) >= maxCachedCommits {
		for k, e := range r.reads.entries {
			if now.Sub(e.at) >= r.ReadInterval() {
				delete(r.reads.entries, k)
			}
		}
		if len(r.reads.entries) >= maxCachedCommits {
			clear(r.reads.entries)
		}
	}
	r.reads.entries[key] = readEntry{statuses: statuses, at: now}
}
