package faultnet

import "net/http"

// StallingServer is an HTTP server that answers every request with 200 and its headers, then
// sends nothing more until the client goes away or the server closes: the failure a client
// with only a connect timeout, or with none, hangs on.
type StallingServer struct{ countingServer }

// NewStallingServer starts a StallingServer on a loopback port; contentType is sent in the
// headers.
func NewStallingServer(contentType string) *StallingServer {
	s := &StallingServer{}
	s.start(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		<-r.Context().Done()
	})
	return s
}
