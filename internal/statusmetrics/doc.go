// Package statusmetrics exports the conditions of convoy's objects as the gauge
// convoy_resource_condition, read from the controller's cache at each scrape: what the Grafana
// dashboard and the alert rules of deploy/monitoring use for a stalled rollout, a GitSource
// that does not fetch and a hosted cluster that cannot be reached (a Package's Ready condition
// with reason HostedClusterUnreachable).
//
// Only the conditions Ready, Stalled and FetchFailed are exported, two or three series per
// object, so that a fleet of thousands of Packages stays a few thousand series.
//
// Usage:
//
//	if err := statusmetrics.Setup(mgr); err != nil { ... }
package statusmetrics
