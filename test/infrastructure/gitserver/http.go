package gitserver

import (
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"strings"
	"time"
)

// httpServer is the HTTP front of a Server.
type httpServer struct {
	srv *http.Server
	url string
}

// StartHTTP serves the repositories over HTTP on a loopback port through `git http-backend`
// and returns the base URL; the URL of repository name is base + "/" + name + ".git".
func (s *Server) StartHTTP() (string, error) {
	backend, err := httpBackendPath()
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listening: %w", err)
	}
	h := &cgi.Handler{
		Path:   backend,
		Stderr: io.Discard,
		Env: []string{"GIT_PROJECT_ROOT=" + s.root, "GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"},
	}
	hs := &httpServer{
		srv: &http.Server{Handler: s.stall(s.authenticate(s.count(h))), ReadHeaderTimeout: 10 * time.Second},
		url: "http://" + ln.Addr().String(),
	}
	go func() { _ = hs.srv.Serve(ln) }()
	s.mu.Lock()
	s.http = hs
	s.mu.Unlock()
	return hs.url, nil
}

// HTTPURL returns the HTTP URL of repository name; StartHTTP must have been called.
func (s *Server) HTTPURL(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http == nil {
		return ""
	}
	return s.http.url + "/" + name + ".git"
}

func (h *httpServer) close() { _ = h.srv.Close() }

// httpBackendPath finds git-http-backend next to the git CLI's helpers.
func httpBackendPath() (string, error) {
	dir, err := git("", nil, "--exec-path")
	if err != nil {
		return "", err
	}
	p := dir + "/git-http-backend"
	if _, err := exec.LookPath(p); err != nil {
		return "", fmt.Errorf("git-http-backend not found: %w", err)
	}
	return p, nil
}

// SetStalled makes the HTTP front stall (true) or serve again (false). A stalled server
// accepts every request, sends the status line and headers of a successful answer, then sends
// nothing more until the client goes away or the stall is lifted: the failure a client
// without a timeout hangs on for ever.
func (s *Server) SetStalled(stalled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case stalled && s.release == nil:
		s.release = make(chan struct{})
	case !stalled && s.release != nil:
		close(s.release)
		s.release = nil
	}
}

// Stalled returns the number of requests that hit a stall since the server started.
func (s *Server) Stalled() int64 { return s.stalls.Load() }

// stall holds requests while the server is stalled.
func (s *Server) stall(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		release := s.release
		s.mu.Unlock()
		if release == nil {
			next.ServeHTTP(w, r)
			return
		}
		s.stalls.Add(1)
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		w.WriteHeader(http.StatusOK)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
}

// authenticate enforces basic auth when it is configured.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		wantUser, wantPass := s.user, s.password
		s.mu.Unlock()
		if wantUser != "" {
			u, p, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(wantUser)) != 1 ||
				subtle.ConstantTimeCompare([]byte(p), []byte(wantPass)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="gitserver"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// count updates the upload-pack counters.
func (s *Server) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		isAdvert := strings.HasSuffix(r.URL.Path, "/info/refs") && r.URL.Query().Get("service") == "git-upload-pack"
		isUpload := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack")
		if !isAdvert && !isUpload {
			next.ServeHTTP(w, r)
			return
		}
		// Note: the Git-Protocol header is dropped so that every client speaks protocol v0,
		// where listing refs is a GET and only a real fetch POSTs to git-upload-pack (in v2
		// ls-refs is a POST too, which would blur the counters).
		r.Header.Del("Git-Protocol")
		if isAdvert {
			s.advertise.Add(1)
		} else {
			s.uploads.Add(1)
		}
		next.ServeHTTP(&countingWriter{ResponseWriter: w, n: &s.bytes}, r)
	})
}

// countingWriter counts response body bytes.
type countingWriter struct {
	http.ResponseWriter
	n interface{ Add(int64) int64 }
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// Flush lets streamed packs through.
func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
