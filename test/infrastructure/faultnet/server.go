package faultnet

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
)

// countingServer is an HTTP server on a loopback port that counts the requests it gets; the
// faulty servers of this package are one.
type countingServer struct {
	*httptest.Server
	requests atomic.Int64
}

// start serves handle, counting each request first.
func (s *countingServer) start(handle http.HandlerFunc) {
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		handle(w, r)
	}))
}

// Requests returns the number of requests received.
func (s *countingServer) Requests() int64 { return s.requests.Load() }

// Close drops the open connections and stops the server.
func (s *countingServer) Close() {
	s.CloseClientConnections()
	s.Server.Close()
}
