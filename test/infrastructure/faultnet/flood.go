package faultnet

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"
)

// FloodingServer is an HTTP server that answers every request with 200 and a JSON body that
// never ends, gzip-compressed when the client accepts it (a few KiB on the wire for every MiB
// the client decompresses): the answer a client without a bound on what it reads holds in
// memory until it runs out.
type FloodingServer struct{ countingServer }

// NewFloodingServer starts a FloodingServer on a loopback port.
func NewFloodingServer() *FloodingServer {
	s := &FloodingServer{}
	s.start(func(w http.ResponseWriter, r *http.Request) {
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
	})
	return s
}
