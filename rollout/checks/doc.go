// Package checks holds the kinds of the checks of a rollout's partitions (issue "Signal
// gates") and evaluates them: a PromQL instant query judged by a CEL success condition
// (prometheus.go), the active alerts of an Alertmanager (alerts.go), and an HTTP endpoint
// (httpcheck.go). It is the rollout controller's I/O: the pure planner (package rollout, whose
// check_gate.go is the Check gate) says which checks are due, the controller's check runner
// (rolloutcontroller/check_runner.go) evaluates them here and writes the results to the
// HostedClusterPackage status.
//
// The kinds form one table (kind.go). Each kind's file registers itself with Register from an
// init function: the field of RolloutCheck that holds it, its conversion into the plain Spec
// the kind compiles (PrometheusCheck, AlertsCheck, HTTPCheck), the Secret its credentials come
// from, and the words messages use for it. Everything else asks the table: the controller
// compiles a RolloutCheck with CompileRolloutCheck, reads the Secret SecretRef names and keys
// its compiled checks and runs by Key; the planner names a failed check's Subject; `convoy
// plan` shows KindOf. The list of kinds is the API type's: a test keeps the table and
// RolloutCheck's fields in step. Adding a kind is the kind's file (its Kind, Spec and
// Evaluator), its field of RolloutCheck with the CRD's exactly-one rule, and its docs (`make
// generate manifests docs`); rollout/fleetview's check_kind_demo_test.go adds one that way.
//
// The data of the Secret a check's secretRef names becomes Credentials with
// CredentialsFromSecret (keys token, or username and password, and ca.crt), whatever the kind.
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
//   - Credentials go over https:// only: InsecureCredentials refuses a check whose secretRef
//     would send them to an http:// address (each kind's Address says where they go), and an
//     evaluation sends nothing when they would, unless Input.AllowInsecureHTTP
//     (--check-allow-insecure-http). Which Secrets a check may read is the controller's rule
//     (rolloutcontroller/check_secrets.go).
//   - A check connects only where Input.Network allows: no link-local or cloud metadata
//     address (internal/dialpolicy), judged on the address each connection is made to.
package checks
