package commitstatus

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
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

// readCache is what Read remembers: by target and commit, the statuses and when they were read;
// by forge and token, until when the forge asked not to be read (a rate limit).
type readCache struct {
	mu      sync.Mutex
	entries map[readKey]readEntry
	// statuses counts the statuses the entries hold.
	statuses int
	holds    map[holdKey]time.Time
}

// holdKey is what a forge's rate limit applies to: its API and the token's Secret.
type holdKey struct {
	provider, apiURL, secret string
}

// readKey is a read's cache key: the whole target but its link, the token's Secret included,
// so a target with another Secret never gets what this one's token read.
type readKey struct {
	provider, apiURL, repository, commit string
	secret                               string
}

type readEntry struct {
	statuses []Observed
	at       time.Time
}

// The cache's bounds, in commits and in statuses (a status kept is at most a context of
// maxContextLength and a description of maxDescription runes); past either, entries older than
// the TTL are dropped first, then all.
const (
	maxCachedCommits  = 4096
	maxCachedStatuses = 100_000
)

// Read returns the latest status of every context on commit in target's repository, read
// with target's token under the Reporter's rules (Opaque Secret, https unless allowed, the
// address policy, no redirect, bounded answers, the token in no error). A read younger than
// ReadTTL is served again. A forge that answers with a rate limit is not read with that token
// again before the limit's end (readWait): reads fail at once until then. Unlike Report it
// waits for the forge, within Timeout.
func (r *Reporter) Read(ctx context.Context, target Target, commit string) ([]Observed, error) {
	r.init()
	key := readKey{provider: target.Provider, apiURL: target.APIURL, repository: target.Repository, commit: commit,
		secret: target.Secret.String()}
	if got, ok := r.cached(key); ok {
		return got, nil
	}
	base, err := checkedBase(target, r.AllowInsecureHTTP)
	if err != nil {
		return nil, err
	}
	hold := holdKey{provider: target.Provider, apiURL: base.String(), secret: key.secret}
	if until, held := r.heldUntil(hold); held {
		return nil, fmt.Errorf("not reading the statuses of %s %s before %s: the forge's rate limit asked to wait",
			target.Provider, target.Repository, until.UTC().Format(time.RFC3339))
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
	read := 0
	for page := 1; ; page++ {
		got, n, more, err := r.readPage(ctx, target, commit, token, page, read)
		if err != nil {
			if wait := retryAfterOf(err); wait > 0 {
				r.holdReads(hold, wait)
			}
			return nil, err
		}
		out, read = append(out, got...), read+n
		if !more {
			break
		}
		if page == maxPages {
			return nil, fmt.Errorf("commit %s has more than %d status contexts in %s %s: too many to read them all",
				commit, read, target.Provider, target.Repository)
		}
	}
	out = newestPerContext(out)
	r.remember(key, out)
	return out, nil
}

// ContextPrefix starts every context convoy posts; Read keeps only those.
const ContextPrefix = "convoy/"

// maxContextLength bounds a kept context: the longest convoy posts is
// "convoy/<sector>/<management cluster>/<key>", three DNS labels.
const maxContextLength = len(ContextPrefix) + 3*63 + 2

// newestPerContext keeps, of several statuses of one context (GitLab keeps one per pipeline),
// the one the forge changed last.
func newestPerContext(in []Observed) []Observed {
	index := map[string]int{}
	out := in[:0]
	for _, o := range in {
		i, seen := index[o.Context]
		switch {
		case !seen:
			index[o.Context] = len(out)
			out = append(out, o)
		case o.At.After(out[i].At):
			out[i] = o
		}
	}
	return slices.Clip(out)
}

// readPage reads one page of commit's latest statuses, after read statuses of the pages
// before. It returns the convoy statuses of the page, how many statuses the page held, and
// whether more follow: by the total the forge gives (GitHub's total_count, Gitea's
// X-Total-Count, GitLab's X-Total), else until an empty page; never by a short page alone,
// since a forge may serve fewer than asked for.
func (r *Reporter) readPage(ctx context.Context, target Target, commit, token string, page, read int) ([]Observed, int, bool, error) {
	u, err := statusesURL(target, commit, r.AllowInsecureHTTP, page)
	if err != nil {
		return nil, 0, false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, false, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	setToken(req, target.Provider, token)
	resp, err := r.HTTP.Do(req)
	if err != nil {
		return nil, 0, false, fmt.Errorf("GET %s: %w", u.Redacted(), redactErr(err, token))
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		msg := strings.ReplaceAll(strings.TrimSpace(string(body)), token, "[redacted]")
		if resp.StatusCode/100 == 3 {
			msg = fmt.Sprintf("redirects are not followed (the token would go with them); redirected to host %q", locationHost(resp))
		}
		err := fmt.Errorf("GET %s: %s: %s", u.Redacted(), resp.Status, msg)
		if wait := readWait(resp, r.now()); wait > 0 {
			err = &retryAfterError{Err: err, After: wait}
		}
		return nil, 0, false, err
	}
	got, n, total, err := decodeStatuses(target.Provider, resp.Body)
	if err != nil {
		return nil, 0, false, fmt.Errorf("GET %s: %w", u.Redacted(), err)
	}
	if t, ok := headerTotal(target.Provider, resp.Header); ok {
		total = t
	}
	switch {
	case total < 0:
		// No total given: the pages go on until an empty one.
		return got, n, n > 0, nil
	case read+n >= total:
		return got, n, false, nil
	case n == 0:
		return nil, 0, false, fmt.Errorf("GET %s: an empty page after %d of %d statuses", u.Redacted(), read, total)
	}
	return got, n, true, nil
}

// defaultReadHold is how long reads wait after a rate-limit answer that says not how long.
const defaultReadHold = time.Minute

// readWait is how long a forge's answer asks the reads of its token to wait: a 429 or 503, or
// a 403 with a Retry-After (GitHub's secondary limit), its Retry-After; GitHub's and GitLab's
// exhausted limit (a 403 or 429 with no requests remaining) until its reset; defaultReadHold
// when the answer says no more; 0 for any other answer.
func readWait(resp *http.Response, now time.Time) time.Duration {
	code, h := resp.StatusCode, resp.Header
	exhausted := (code == http.StatusForbidden || code == http.StatusTooManyRequests) &&
		(h.Get("X-RateLimit-Remaining") == "0" || h.Get("RateLimit-Remaining") == "0")
	secondary := code == http.StatusForbidden && h.Get("Retry-After") != ""
	if code != http.StatusTooManyRequests && code != http.StatusServiceUnavailable && !exhausted && !secondary {
		return 0
	}
	wait := parseRetryAfter(h.Get("Retry-After"), now)
	reset, err := strconv.ParseInt(cmp.Or(h.Get("X-RateLimit-Reset"), h.Get("RateLimit-Reset")), 10, 64)
	if exhausted && wait == 0 && err == nil {
		wait = min(max(time.Unix(reset, 0).Sub(now), 0), maxRetryAfter)
	}
	if wait == 0 {
		wait = defaultReadHold
	}
	return wait
}

// heldUntil reports whether the reads of key wait for a rate limit, and until when.
func (r *Reporter) heldUntil(key holdKey) (time.Time, bool) {
	r.reads.mu.Lock()
	defer r.reads.mu.Unlock()
	until, ok := r.reads.holds[key]
	return until, ok && r.now().Before(until)
}

// holdReads makes the reads of key wait for d. At most maxReadHolds are kept: the holds that
// ended go first, then the one that ends soonest, so that many forges answering with long
// limits cannot push out the hold of another.
func (r *Reporter) holdReads(key holdKey, d time.Duration) {
	r.reads.mu.Lock()
	defer r.reads.mu.Unlock()
	now := r.now()
	if r.reads.holds == nil {
		r.reads.holds = map[holdKey]time.Time{}
	}
	maps.DeleteFunc(r.reads.holds, func(_ holdKey, until time.Time) bool { return !now.Before(until) })
	if _, held := r.reads.holds[key]; !held && len(r.reads.holds) >= maxReadHolds {
		var soonest holdKey
		for k, until := range r.reads.holds {
			if first, ok := r.reads.holds[soonest]; !ok || until.Before(first) {
				soonest = k
			}
		}
		delete(r.reads.holds, soonest)
	}
	r.reads.holds[key] = now.Add(d)
}

// maxReadHolds bounds the rate-limit holds kept: one per forge and token Secret.
const maxReadHolds = 1024

// headerTotal is the number of statuses a forge gives in a header: Gitea's X-Total-Count (its
// body's total_count counts the page only), GitLab's X-Total (left out above 10,000).
func headerTotal(provider string, h http.Header) (int, bool) {
	name := map[string]string{convoyv1alpha1.CommitStatusGitea: "X-Total-Count", convoyv1alpha1.CommitStatusGitLab: "X-Total"}[provider]
	if name == "" || h.Get(name) == "" {
		return 0, false
	}
	n, err := strconv.Atoi(h.Get(name))
	return n, err == nil && n >= 0
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
// GitLab's array. It returns the convoy statuses of the page, how many statuses it held, and
// the total its body gives: GitHub's total_count; -1 for the others (Gitea's counts the page
// only, GitLab's is a header).
func decodeStatuses(provider string, body io.Reader) ([]Observed, int, int, error) {
	var wire []wireStatus
	total := -1
	dec := json.NewDecoder(body)
	if provider == convoyv1alpha1.CommitStatusGitLab {
		if err := dec.Decode(&wire); err != nil {
			return nil, 0, 0, fmt.Errorf("reading the statuses: %w", err)
		}
	} else {
		var combined struct {
			TotalCount int          `json:"total_count"`
			Statuses   []wireStatus `json:"statuses"`
		}
		if err := dec.Decode(&combined); err != nil {
			return nil, 0, 0, fmt.Errorf("reading the combined status: %w", err)
		}
		wire = combined.Statuses
		if provider == convoyv1alpha1.CommitStatusGitHub {
			total = combined.TotalCount
		}
	}
	out := make([]Observed, 0, len(wire))
	for _, w := range wire {
		o := w.observed(provider)
		// Only convoy's contexts are kept, their descriptions cut as they are posted: what a
		// forge answers stays bounded in the cache whatever it sends.
		if strings.HasPrefix(o.Context, ContextPrefix) && len(o.Context) <= maxContextLength {
			o.Description = cutDescription(o.Description)
			out = append(out, o)
		}
	}
	return out, len(wire), total, nil
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

// remember keeps a read, within the cache's bounds.
func (r *Reporter) remember(key readKey, statuses []Observed) {
	r.reads.mu.Lock()
	defer r.reads.mu.Unlock()
	now := r.now()
	if r.reads.entries == nil {
		r.reads.entries = map[readKey]readEntry{}
	}
	if old, ok := r.reads.entries[key]; ok {
		r.reads.statuses -= len(old.statuses)
		delete(r.reads.entries, key)
	}
	full := func() bool {
		return len(r.reads.entries) >= maxCachedCommits || r.reads.statuses+len(statuses) > maxCachedStatuses
	}
	if full() {
		for k, e := range r.reads.entries {
			if now.Sub(e.at) >= r.ReadInterval() {
				r.reads.statuses -= len(e.statuses)
				delete(r.reads.entries, k)
			}
		}
	}
	if full() {
		clear(r.reads.entries)
		r.reads.statuses = 0
	}
	r.reads.entries[key] = readEntry{statuses: statuses, at: now}
	r.reads.statuses += len(statuses)
}
