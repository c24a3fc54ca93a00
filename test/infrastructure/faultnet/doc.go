// Package faultnet injects network faults in front of real servers, for the tests and the
// fault harness: a TCP proxy that forwards, blackholes (accepts connections and never answers)
// or refuses, switchable while clients are connected, an HTTP server that answers with
// headers and then stalls, and one whose answer never ends.
//
// Example:
//
//	p, err := faultnet.NewProxy("127.0.0.1:6443") // the real API server
//	if err != nil { ... }
//	defer p.Close()
//	// point a kubeconfig at "https://" + p.Addr()
//	p.SetMode(faultnet.Blackhole) // open connections close; new ones hang
//	p.SetMode(faultnet.Forward)   // the server is back
package faultnet
