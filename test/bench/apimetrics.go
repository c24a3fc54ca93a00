package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Requests counts API requests by verb, named as the API server's metrics name them (GET,
// LIST, WATCH, POST, PUT, PATCH, APPLY, DELETE, ...). Dry runs are counted apart, as
// "<verb>/dry-run", and so are requests on Leases, as "<verb>/leases": the API server renews
// its own identity Lease every 10 s, and the controller runs without leader election. Requests
// on convoy's bookkeeping (its own kinds, the gates' included, ControllerRevisions, Events) and
// on Flux's kinds are named "<verb>/<resource>[/<subresource>]"; the bare verbs are requests on
// the packages' objects.
type Requests map[string]float64

// writeVerbs are the verbs that change state.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// bookkeeping are the resources whose requests are named after them.
var bookkeeping = map[string]bool{"packages": true, "hostedclusterpackages": true, "gitsources": true,
	"objectdeployments": true, "controllerrevisions": true, "events": true,
	// The gates' kinds: the controller watches them from its first HostedClusterPackage pass.
	"partitionapprovals": true, "rolloutapprovals": true, "manualpromotions": true, "promotionapprovals": true,
	// Flux's, for the flux scenario.
	"kustomizations": true, "gitrepositories": true}

// requestKey names a request in Requests.
func requestKey(verb, resource, subresource string, dryRun bool) string {
	switch {
	case dryRun:
		return verb + "/dry-run"
	case resource == "leases":
		return verb + "/leases"
	case bookkeeping[resource] && subresource != "":
		return verb + "/" + resource + "/" + subresource
	case bookkeeping[resource]:
		return verb + "/" + resource
	}
	return verb
}

// Total returns the number of requests of every verb.
func (r Requests) Total() float64 {
	var n float64
	for _, v := range r {
		n += v
	}
	return n
}

// Writes returns the number of requests that change state; dry runs and Lease renewals are
// not counted.
func (r Requests) Writes() float64 {
	var n float64
	for k, v := range r {
		verb, rest, _ := strings.Cut(k, "/")
		if writeVerbs[verb] && rest != "dry-run" && rest != "leases" {
			n += v
		}
	}
	return n
}

// OnObjects returns the number of requests on the packages' objects, dry runs included.
func (r Requests) OnObjects() float64 {
	var n float64
	for k, v := range r {
		if _, rest, _ := strings.Cut(k, "/"); rest == "" || rest == "dry-run" {
			n += v
		}
	}
	return n
}

// Sub returns r minus o, verb by verb, never below zero.
func (r Requests) Sub(o Requests) Requests {
	out := Requests{}
	for k, v := range r {
		if d := v - o[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// String lists the verbs in a stable order, e.g. "APPLY=10 GET=3".
func (r Requests) String() string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+strconv.FormatFloat(r[k], 'f', countDigits(r[k]), 64))
	}
	return strings.Join(parts, " ")
}

// countDigits is the digits a count is printed with: none for a whole count, one for a mean of
// counts (the mean of two floors' passes may hold half a request).
func countDigits(v float64) int {
	if v == math.Trunc(v) {
		return 0
	}
	return 1
}

// requestLine matches a series of apiserver_request_total; labels are parsed separately.
var requestLine = regexp.MustCompile(`^apiserver_request_total\{(.*)\} ([0-9.e+]+)$`)

// labelPair matches key="value" in a Prometheus label set.
var labelPair = regexp.MustCompile(`(\w+)="([^"]*)"`)

// scrapeRequests reads apiserver_request_total from the API server's /metrics and sums it by
// verb over resource requests (non-resource requests such as /metrics itself are left out).
func scrapeRequests(ctx context.Context, cfg *rest.Config) (Requests, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping the API server's metrics: %w", err)
	}
	out := Requests{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := requestLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, kv := range labelPair.FindAllStringSubmatch(m[1], -1) {
			labels[kv[1]] = kv[2]
		}
		if labels["resource"] == "" {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, err
		}
		out[requestKey(labels["verb"], labels["resource"], labels["subresource"], labels["dry_run"] != "")] += v
	}
	return out, sc.Err()
}

// countingTransport tallies the requests of the benchmark's own clients by verb, so that they
// can be taken out of the API server's counts.
type countingTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen Requests
}

// countRequests wraps cfg's transport so that the returned counter sees every request.
func countRequests(cfg *rest.Config) (*rest.Config, *countingTransport) {
	ct := &countingTransport{seen: Requests{}}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { ct.next = rt; return ct })
	return cfg, ct
}

// RoundTrip counts req and passes it on.
func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if v := verbOf(req); v != "" {
		c.mu.Lock()
		c.seen[v]++
		c.mu.Unlock()
	}
	return c.next.RoundTrip(req)
}

// snapshot returns a copy of the counts.
func (c *countingTransport) snapshot() Requests {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Requests{}
	for k, v := range c.seen {
		out[k] = v
	}
	return out
}

// verbOf names a resource request as the API server's metrics do, with requestKey; "" for
// non-resource paths.
func verbOf(req *http.Request) string {
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:]
	default:
		return ""
	}
	if len(segs) >= 3 && segs[0] == "namespaces" {
		segs = segs[2:]
	}
	if len(segs) == 0 {
		return ""
	}
	resource, subresource := segs[0], ""
	if len(segs) >= 3 {
		subresource = segs[2]
	}
	return requestKey(methodVerb(req, len(segs) <= 1), resource, subresource, req.URL.Query().Get("dryRun") != "")
}

// methodVerb names the verb of a request; collection tells a LIST from a GET.
func methodVerb(req *http.Request, collection bool) string {
	switch req.Method {
	case http.MethodPost:
		return "POST"
	case http.MethodPut:
		return "PUT"
	case http.MethodDelete:
		return "DELETE"
	case http.MethodPatch:
		if req.Header.Get("Content-Type") == "application/apply-patch+yaml" {
			return "APPLY"
		}
		return "PATCH"
	}
	switch {
	case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
		return "WATCH"
	case collection:
		return "LIST"
	default:
		return "GET"
	}
}
