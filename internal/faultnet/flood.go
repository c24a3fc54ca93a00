package faultnet

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
)

// FloodingServer is an HTTP server that answers every request with 200 and a JSON body that
// never ends, gzip-compressed when the client accepts it (a few KiB on the wire for every MiB
// the client decompresses): the answer a client without a bound on what it reads holds in
// memory until it runs out.
type FloodingServer struct {
	*httptest.Server
	requests atomic.Int64
}

// NewFloodingServer starts a FloodingServer on a loopback port.
func NewFloodingServer() *FloodingServer {
	s := &FloodingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		var out io.Writer = w
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			defer zw.Close()
			out = zw
		}
		chunk := []byte(strings.Repeat("a", 64<<10))
		if _, err := io.WriteString(out, `{"kind":"Status","message":"`); err != nil {
			return
		}
		for r.Context().Err() == nil {
			if _, err := out.Write(chunk); err != nil {
				return
			}
		}
	}))
	return s
}

// Requests returns the number of requests received.
func (s *FloodingServer) Requests() int64 { return s.requests.Load() }

// Close drops the connections and stops the server.
func (s *FloodingServer) Close() {
	s.CloseClientConnections()
	s.Server.Close()
}
