package gitserver

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// Stats counts what the server served since it started.
type Stats struct {
	// Advertisements is the number of upload-pack ref advertisements (ls-remote or the first
	// half of a fetch) served over HTTP.
	Advertisements int64
	// UploadPacks is the number of upload-pack negotiations (POST git-upload-pack over HTTP,
	// or one git-upload-pack session over SSH): a poll that fetches nothing makes none over
	// HTTP.
	UploadPacks int64
	// Bytes is the number of bytes of upload-pack responses (advertisements and packs).
	Bytes int64
}

// Sub returns s minus o, to measure one operation.
func (s Stats) Sub(o Stats) Stats {
	return Stats{
		Advertisements: s.Advertisements - o.Advertisements,
		UploadPacks:    s.UploadPacks - o.UploadPacks,
		Bytes:          s.Bytes - o.Bytes,
	}
}

// Server holds bare repositories under one directory and serves them.
type Server struct {
	root string

	mu        sync.Mutex
	repos     map[string]*Repo
	user      string
	password  string
	http      *httpServer
	ssh       *sshServer
	authKeys  [][]byte
	advertise atomic.Int64
	uploads   atomic.Int64
	bytes     atomic.Int64
	// release is non-nil while the HTTP front is stalled; closing it lets stalled requests go.
	release chan struct{}
	stalls  atomic.Int64
}

// New returns a server keeping its repositories under dir (created if needed). Start
// protocols with StartHTTP and StartSSH; file:// URLs work at once.
func New(dir string) (*Server, error) {
	root := filepath.Join(dir, "repos")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", root, err)
	}
	return &Server{root: root, repos: map[string]*Repo{}}, nil
}

// Root returns the directory holding the bare repositories.
func (s *Server) Root() string { return s.root }

// CreateRepo creates an empty bare repository name (served as name + ".git").
func (s *Server) CreateRepo(name string) (*Repo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.repos[name]; ok {
		return nil, fmt.Errorf("repository %q exists", name)
	}
	r, err := initRepo(name, filepath.Join(s.root, name+".git"))
	if err != nil {
		return nil, err
	}
	s.repos[name] = r
	return r, nil
}

// Repo returns the repository name, or nil.
func (s *Server) Repo(name string) *Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repos[name]
}

// FileURL returns the file:// URL of repository name.
func (s *Server) FileURL(name string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(s.root, name+".git"))}).String()
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	return Stats{
		Advertisements: s.advertise.Load(),
		UploadPacks:    s.uploads.Load(),
		Bytes:          s.bytes.Load(),
	}
}

// SetBasicAuth requires HTTP basic auth with these credentials; empty user disables it.
func (s *Server) SetBasicAuth(user, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user, s.password = user, password
}

// Close stops the HTTP and SSH listeners. Repositories stay on disk.
func (s *Server) Close() {
	s.mu.Lock()
	h, sh := s.http, s.ssh
	s.mu.Unlock()
	if h != nil {
		h.close()
	}
	if sh != nil {
		sh.close()
	}
}
