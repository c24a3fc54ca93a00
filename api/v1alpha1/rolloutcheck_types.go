package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Rollout check defaults and bounds.
const (
	// DefaultCheckIntervalSeconds is the time between two evaluations of a check.
	DefaultCheckIntervalSeconds = 30
	// DefaultHTTPCheckTimeoutSeconds bounds one request of an HTTP check.
	DefaultHTTPCheckTimeoutSeconds = 10
	// MaxChecks bounds the checks of a rollout, and of a partition policy.
	MaxChecks = 16
	// MaxCheckValue bounds status.partitions[].checks[].lastValue, in bytes.
	MaxCheckValue = 256
	// MaxCheckMessage bounds status.partitions[].checks[].message, in bytes.
	MaxCheckMessage = 1024
)

// Check states.
const (
	// CheckRunning: the check is evaluated at its interval and has not passed yet.
	CheckRunning = "Running"
	// CheckPassed: the check's duration is over and its failures stayed within failureLimit.
	CheckPassed = "Passed"
	// CheckFailed: more evaluations failed than failureLimit tolerates; the rollout fails.
	CheckFailed = "Failed"
	// CheckInconclusive: more consecutive evaluations were inconclusive than inconclusiveLimit
	// tolerates; the check holds the rollout until an evaluation is conclusive.
	CheckInconclusive = "Inconclusive"
)

// RolloutCheck is a signal a partition must pass before the next partition starts and before
// the rollout completes: a Prometheus query, the alerts of an Alertmanager, or an HTTP
// endpoint. It is evaluated from the moment the partition's last Package progressed, every
// intervalSeconds, for durationSeconds. Exactly one of prometheus, alerts or http is set.
// +kubebuilder:validation:XValidation:rule="[has(self.prometheus), has(self.alerts), has(self.http)].filter(x, x).size() == 1",message="exactly one of prometheus, alerts or http must be set"
type RolloutCheck struct {
	// name of the check, unique in its list: status, events and metrics name it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// intervalSeconds between two evaluations.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=1
	IntervalSeconds int32 `json:"intervalSeconds,omitempty"`

	// durationSeconds the check keeps being evaluated after the partition's last Package
	// progressed; it passes only once that time is over. 0, the default, is a single
	// evaluation.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	DurationSeconds int32 `json:"durationSeconds,omitempty"`

	// failureLimit is the number of failed evaluations tolerated; one more fails the check,
	// and with it the rollout.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	FailureLimit int32 `json:"failureLimit,omitempty"`

	// inconclusiveLimit is the number of consecutive inconclusive evaluations tolerated (an
	// unreachable server, a timeout, an error of the query or the condition); one more makes
	// the check Inconclusive, which holds the rollout until an evaluation is conclusive.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	InconclusiveLimit int32 `json:"inconclusiveLimit,omitempty"`

	// prometheus evaluates a PromQL instant query and a CEL success condition over its result.
	// +optional
	Prometheus *PrometheusCheck `json:"prometheus,omitempty"`

	// alerts passes while no active alert of an Alertmanager matches, apart from alerts that
	// started before the partition did.
	// +optional
	Alerts *AlertsCheck `json:"alerts,omitempty"`

	// http POSTs the partition and the revision as JSON to a URL; a 2xx answer passes.
	// +optional
	HTTP *HTTPCheck `json:"http,omitempty"`
}

// PrometheusCheck is a PromQL instant query with a success condition.
type PrometheusCheck struct {
	// address of the Prometheus API, e.g. "https://prometheus.monitoring:9090"; the check
	// queries <address>/api/v1/query.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://.+`
	Address string `json:"address"`

	// query is a PromQL expression, a Go template over the partition: .HostedClusterPackage,
	// .Partition, .Revision, .Commit and .HostedClusters (each with .Name, .Namespace,
	// .HCPNamespace and .Labels), with the functions names and regex, e.g.
	// `max(convoy_test_addon_error_ratio{hosted_cluster=~"{{ regex (names .HostedClusters) }}"})`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query"`

	// successCondition is a CEL expression that returns a bool over `result`, the instant
	// vector (a list of {metric: map(string, string), value: double}), and `values`, its
	// values (list(double)), e.g. "values.all(v, v < 0.05)". An empty result is given to the
	// condition, which decides.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	SuccessCondition string `json:"successCondition"`

	// secretRef names credentials for Prometheus.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// AlertsCheck looks for active alerts of an Alertmanager.
type AlertsCheck struct {
	// address of the Alertmanager API, e.g. "https://alertmanager.monitoring:9093"; the check
	// queries <address>/api/v2/alerts.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://.+`
	Address string `json:"address"`

	// matchers select the alerts, in Alertmanager's forms label="v", label!="v", label=~"re"
	// and label!~"re"; each is a Go template like prometheus.query, e.g.
	// `hosted_cluster=~"{{ regex (names .HostedClusters) }}"`. An alert matches when every
	// matcher does. The check passes when no active (neither silenced nor inhibited) matching
	// alert started at or after the partition's start.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=1024
	Matchers []string `json:"matchers"`

	// secretRef names credentials for Alertmanager.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// HTTPCheck asks an HTTP endpoint about the partition.
type HTTPCheck struct {
	// url the check POSTs to, with the JSON body {hostedClusterPackage, partition, revision,
	// commit, hostedClusters: [{name, namespace, labels}]}. A 2xx answer passes; any other
	// status, a redirect included, fails. TLS is verified.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://.+`
	URL string `json:"url"`

	// timeoutSeconds bounds one request.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// secretRef names credentials for the endpoint.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// SecretReference names a Secret of type Opaque for a check's credentials: in the namespace of
// the HostedClusterPackage's GitSource (spec.template.spec.sourceRef.namespace), or in another
// namespace when the Secret's annotation convoy.dev/check-credentials lists the
// HostedClusterPackage's name (or is "*"); any other Secret is refused (its keys are never used)
// and the check is inconclusive. A check reads its key "token" (sent as Authorization: Bearer), or
// "username" and "password" (basic authentication), and the optional "ca.crt" (PEM) to verify
// the server; it sends them over https:// only, unless the controller runs with
// --check-allow-insecure-http, and never follows a redirect. Credentials never appear in
// status, events, logs or errors.
type SecretReference struct {
	// namespace of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// CheckStatus reports one check of a partition, for one revision.
type CheckStatus struct {
	// name of the check.
	// +required
	Name string `json:"name"`

	// revision names the ControllerRevision the results are for; results of another revision
	// are ignored and the check starts over.
	// +required
	Revision string `json:"revision"`

	// state: Running, Passed, Failed or Inconclusive.
	// +required
	// +kubebuilder:validation:Enum=Running;Passed;Failed;Inconclusive
	State string `json:"state"`

	// passes is the number of evaluations that passed.
	// +optional
	Passes int32 `json:"passes"`

	// failures is the number of evaluations that failed.
	// +optional
	Failures int32 `json:"failures"`

	// inconclusive is the number of consecutive inconclusive evaluations, up to the last one.
	// +optional
	Inconclusive int32 `json:"inconclusive"`

	// lastValue is what the last evaluation saw (a query's values, the matching alerts, an
	// HTTP status), at most 256 bytes.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	LastValue string `json:"lastValue,omitempty"`

	// message is for humans: why the last evaluation passed, failed or was inconclusive.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// lastEvaluated is when the check was last evaluated.
	// +optional
	LastEvaluated *metav1.Time `json:"lastEvaluated,omitempty"`

	// startedAt is when the check started: when the partition's last Package progressed.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
}

// Interval returns the time between two evaluations (the default when unset).
func (c *RolloutCheck) Interval() time.Duration {
	if c.IntervalSeconds <= 0 {
		return DefaultCheckIntervalSeconds * time.Second
	}
	return time.Duration(c.IntervalSeconds) * time.Second
}

// Duration returns how long the check keeps being evaluated; zero for a single evaluation.
func (c *RolloutCheck) Duration() time.Duration {
	return time.Duration(max(c.DurationSeconds, 0)) * time.Second
}

// Timeout returns the bound of one request of the HTTP check (the default when unset).
func (c *HTTPCheck) Timeout() time.Duration {
	if c.TimeoutSeconds <= 0 {
		return DefaultHTTPCheckTimeoutSeconds * time.Second
	}
	return time.Duration(c.TimeoutSeconds) * time.Second
}
