// Package dashboard is the read-only web dashboard `convoy dashboard` serves: a fleet view of
// every HostedClusterPackage, the rollout of one as a grid of partitions × clusters with its
// budget and a timeline, and the phases, objects, last error and events of one Package.
//
// The Server reads the management cluster through a controller-runtime cache (informers), never
// per browser: each informer event marks the views stale (Hub), and every open page, subscribed
// by server-sent events, gets the new JSON of its view once per change. The views are computed
// from the cache by the functions of views.go and grid.go, which take a client.Reader, so tests
// can feed them any reader. The page itself (HTML, CSS and a small script) is embedded.
//
// Secrets are never read: the cache watches HostedClusterPackages, Packages, HostedClusters,
// GitSources, labelled ControllerRevisions and Package events only, and no view copies a spec's
// config or a Secret reference's content.
//
// Usage:
//
//	srv, err := dashboard.New(cfg, dashboard.Options{})
//	go srv.Start(ctx)
//	http.ListenAndServe("127.0.0.1:8080", srv.Handler())
package dashboard
