// Package checks evaluates the checks of a rollout's partitions (issue "Signal gates"): a
// PromQL instant query judged by a CEL success condition, the active alerts of an Alertmanager,
// and an HTTP endpoint. It is the rollout controller's I/O: the pure planner (package rollout)
// says which checks are due, the controller evaluates them here and writes the results to the
// HostedClusterPackage status.
//
// The package has plain input types of its own (PrometheusCheck, AlertsCheck, HTTPCheck,
// Credentials, Data) so that it depends on no API type: the controller converts a RolloutCheck
// into a Spec, and the data of the Secret its secretRef names into Credentials with
// CredentialsFromSecret (keys token, or username and password, and ca.crt).
//
// A check is compiled once (Compile): its templates are parsed, its CEL condition is compiled
// and cost-estimated and its addresses are validated, so that a spec error is found before any
// I/O and reported as a *SpecError naming the field and the rule it breaks. A compiled Check is
// then evaluated as often as the planner says (Check.Evaluate); each evaluation renders the
// templates with the partition's Data and returns an Evaluation whose Outcome is Success,
// Failure or Inconclusive.
//
// Rules:
//   - Templates are Go text/template with missingkey=error over Data and two functions only:
//     names (the clusters' names) and regex (a list as an alternation that matches each item
//     literally, with no backslash for a character of a Kubernetes name or label value, so that
//     it fits in a double-quoted PromQL or matcher string). No other function, no Secret and no environment are reachable from a template,
//     so a template cannot leak a credential. A rendered template is at most MaxRenderedBytes.
//   - Inconclusive is never a pass: an unreachable server, a timeout, an answer that is not the
//     API's, a query Prometheus refuses, an answer over its bounds and a condition that fails
//     to evaluate (a missing key, an index out of range, a NaN compared, the cost limit) are all
//     inconclusive.
//   - Every answer is bounded: MaxPrometheusBody and MaxSeries for Prometheus, MaxAlertsBody
//     for Alertmanager, MaxHTTPBody read from an HTTP check (and only a MaxSampleBytes sample of
//     it reported). Evaluation.Value is at most MaxValueBytes and Evaluation.Message at most
//     MaxMessageBytes.
//   - Credentials travel as headers only (Authorization: Bearer or Basic) and never appear in
//     an Evaluation or an error: URLs are reported without their user information, addresses
//     with user information are refused, and every output is scrubbed of the credentials'
//     strings as a last line of defence.
//   - Redirects are never followed; an HTTP check that is redirected fails, naming the host it
//     was sent to. TLS is verified against the system's roots plus the Credentials' CA.
package checks
