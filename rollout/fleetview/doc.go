// Package fleetview is what `convoy status` and `convoy plan` show: it reads a
// HostedClusterPackage and the fleet around it from the management cluster (Read), summarises the
// rollout its status reports (NewReport, Report.WriteText), forecasts in which order a revision
// would reach the HostedClusters by replaying the pure planner of package rollout on a copy of
// the fleet (NewForecast, Forecast.WriteText), and redraws a report until interrupted (Watch).
//
// The gates of a rollout (a soak, checks, an approval, a window, failures) show in both: a report
// prints status.gate, each partition's state with its end or the command that approves it
// (ApproveCommand), and each partition's checks with their last result; a forecast follows the
// planner's gates on its simulated clock, passing each as soon as it can open (a check passes at
// its first evaluation once its duration is over; a failed one stays failed), and says when each
// partition can start and when its checks pass, at the earliest.
//
// Nothing here writes to the API server. The cmd/convoy commands only parse flags, build a client
// and call these functions.
//
// Usage:
//
//	snap, err := fleetview.Read(ctx, c, "log-collector")
//	report := fleetview.NewReport(snap)
//	report.WriteText(os.Stdout)
//
//	forecast, err := fleetview.NewForecast(snap, fleetview.ForecastOptions{Now: time.Now()})
//	forecast.WriteText(os.Stdout)
package fleetview
