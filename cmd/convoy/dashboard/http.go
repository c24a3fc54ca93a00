package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// keepAlive is how often an idle event stream gets a comment, so that proxies keep it open.
const keepAlive = 15 * time.Second

//go:embed assets
var assets embed.FS

// Handler serves the page, the JSON of each view and the event stream of each view. Every
// route is read-only: only GET is served.
func (s *Server) Handler() http.Handler {
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded folder is part of the binary
	}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.HandleFunc("GET /api/view", s.serveView)
	mux.HandleFunc("GET /api/stream", s.serveStream)
	return securityHeaders(mux)
}

// securityHeaders forbids framing and inline code other than the page's own.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// LoopbackHosts serves next only to requests whose Host header names a loopback address or
// localhost, with or without a port: a web page the browser loaded from elsewhere cannot read
// the dashboard by pointing its own host name at 127.0.0.1 (DNS rebinding). Other requests get
// 403.
func LoopbackHosts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, fmt.Sprintf("host %q is not a loopback address: open the dashboard at http://127.0.0.1", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// viewBuilder builds one view from the cache.
type viewBuilder func(ctx context.Context) (any, error)

// builderFor parses the query of a view request: view=fleet, view=rollout&name=N (with offset,
// limit and state) or view=package&namespace=NS&name=N. key identifies the view and its query.
func (s *Server) builderFor(r *http.Request) (key string, build viewBuilder, err error) {
	q := r.URL.Query()
	name := q.Get("name")
	switch q.Get("view") {
	case "fleet", "":
		return "fleet", func(ctx context.Context) (any, error) { return BuildFleet(ctx, s.reader) }, nil
	case "rollout":
		rq, err := rolloutQuery(q.Get("offset"), q.Get("limit"), q.Get("state"))
		if err != nil || name == "" {
			return "", nil, errors.Join(err, errors.New("view=rollout needs name"))
		}
		key = fmt.Sprintf("rollout/%s/%d/%d/%s", name, rq.Offset, rq.Limit, rq.State)
		return key, func(ctx context.Context) (any, error) { return BuildRollout(ctx, s.reader, name, rq, s.now()) }, nil
	case "package":
		ns := q.Get("namespace")
		if ns == "" || name == "" {
			return "", nil, errors.New("view=package needs namespace and name")
		}
		return "package/" + ns + "/" + name, func(ctx context.Context) (any, error) { return BuildPackage(ctx, s.reader, ns, name) }, nil
	}
	return "", nil, fmt.Errorf("unknown view %q: use fleet, rollout or package", q.Get("view"))
}

// rolloutQuery reads the paging of the grid.
func rolloutQuery(offset, limit, state string) (RolloutQuery, error) {
	q := RolloutQuery{State: state}
	var err error
	if offset != "" {
		if q.Offset, err = strconv.Atoi(offset); err != nil || q.Offset < 0 {
			return q, fmt.Errorf("offset must be a number of cells, got %q", offset)
		}
	}
	if limit != "" {
		if q.Limit, err = strconv.Atoi(limit); err != nil || q.Limit < 1 || q.Limit > 2000 {
			return q, fmt.Errorf("limit must be between 1 and 2000, got %q", limit)
		}
	}
	if state != "" && !validState(state) {
		return q, fmt.Errorf("unknown state %q: use one of %s", state, strings.Join(cellStates, ", "))
	}
	return q, nil
}

// validState reports whether s is a cell state.
func validState(s string) bool {
	for _, st := range cellStates {
		if st == s {
			return true
		}
	}
	return false
}

// serveView writes the JSON of one view.
func (s *Server) serveView(w http.ResponseWriter, r *http.Request) {
	key, build, err := s.builderFor(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	gen, _ := s.hub.Current()
	data, err := s.view(r.Context(), key, gen, build)
	if err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// statusOf maps a view's error to an HTTP status.
func statusOf(err error) int {
	if apierrors.IsNotFound(err) {
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

// serveStream sends the view as server-sent events: its JSON at once, then again after each
// change of the cache that changes it.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	key, build, err := s.builderFor(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	ticker := time.NewTicker(keepAlive)
	defer ticker.Stop()
	var last []byte
	for {
		gen, changed := s.hub.Current()
		data, err := s.view(r.Context(), key, gen, build)
		if err != nil {
			data = []byte(fmt.Sprintf(`{"error":%q}`, err.Error()))
		}
		if !bytes.Equal(data, last) {
			last = data
			if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
				return
			}
			flusher.Flush()
		}
		if !waitForChange(r.Context(), changed, ticker.C, w, flusher) {
			return
		}
	}
}

// waitForChange waits for changed, sending a comment at each tick; false once the client left.
func waitForChange(ctx context.Context, changed <-chan struct{}, tick <-chan time.Time, w http.ResponseWriter, f http.Flusher) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-changed:
			return true
		case <-tick:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return false
			}
			f.Flush()
		}
	}
}
