package faultnet

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
)

// StallingServer is an HTTP server that answers every request with 200 and its headers, then
// sends nothing more until the client goes away or the server closes: the failure a client
// with only a connect timeout, or with none, hangs on.
type StallingServer struct {
	*httptest.Server
	requests atomic.Int64
}

// NewStallingServer starts a StallingServer on a loopback port; contentType is sent in the
// headers.
func NewStallingServer(contentType string) *StallingServer {
	s := &StallingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		<-r.Context().Done()
	}))
	return s
}

// Requests returns the number of requests received.
func (s *StallingServer) Requests() int64 { return s.requests.Load() }

// Close drops the stalled connections and stops the server.
func (s *StallingServer) Close() {
	s.CloseClientConnections()
	s.Server.Close()
}
