package checks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// recordedRequest is what a test server saw of a request.
type recordedRequest struct {
	Method, Path, Authorization, ContentType string
	Query                                    url.Values
	Body                                     []byte
}

// answerServer is a real HTTP server on loopback that records each request and answers with
// the handler the test sets.
type answerServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recordedRequest
}

// startServer starts an answerServer whose answers come from answer; it stops with the test.
func startServer(t *testing.T, answer http.HandlerFunc) *answerServer {
	t.Helper()
	s := &answerServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		answer(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// record keeps what the server saw of r.
func (s *answerServer) record(r *http.Request) {
	body := make([]byte, 64<<10)
	n, _ := r.Body.Read(body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, recordedRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(),
		Authorization: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"), Body: body[:n]})
}

// count returns the number of requests the server saw.
func (s *answerServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// last returns the last request the server saw.
func (s *answerServer) last() recordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return recordedRequest{}
	}
	return s.requests[len(s.requests)-1]
}

// answerWith answers every request with code and body.
func answerWith(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

// neverAnswer holds every request until the client gives up or the server stops.
func neverAnswer(stop <-chan struct{}) http.HandlerFunc {
	return func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}
}

// evaluate compiles spec and evaluates it once within a minute.
func evaluate(t *testing.T, spec Spec, in Input) (Evaluation, error) {
	t.Helper()
	g := NewWithT(t)
	c, err := Compile(spec)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.Evaluate(ctx, in)
}

// closedAddress returns the address of a server that was started and stopped: nothing listens.
func closedAddress() string {
	s := httptest.NewServer(http.NotFoundHandler())
	s.Close()
	return s.URL
}
