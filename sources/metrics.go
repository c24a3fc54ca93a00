package sources

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of a poll, the result label of the poll metrics.
const (
	// PollFetched: the remote had a commit the store lacked, and it was fetched.
	PollFetched = "fetched"
	// PollUnchanged: the resolved commit was already stored; nothing was transferred.
	PollUnchanged = "unchanged"
	// PollFailed: listing the remote or fetching failed.
	PollFailed = "failed"
)

// Metrics of the polls, registered with controller-runtime's registry (served on /metrics).
var (
	pollsCounter = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_git_polls_total",
		Help: "Polls of a GitSource's remote by result: fetched (new objects), unchanged or failed.",
	}, []string{"namespace", "name", "result"})
	pollDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "convoy_git_poll_duration_seconds",
		Help:    "Time to list a GitSource's remote refs and fetch its commit when new, by result.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"result"})
	lastPollSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "convoy_git_last_successful_poll_timestamp_seconds",
		Help: "When a GitSource's remote was last polled successfully (Unix time).",
	}, []string{"namespace", "name"})
)

func init() {
	metrics.Registry.MustRegister(pollsCounter, pollDuration, lastPollSuccess)
}

// observePoll records one poll of key that started at start.
func observePoll(key Key, start time.Time, res PollResult, err error) {
	result := PollUnchanged
	switch {
	case err != nil:
		result = PollFailed
	case res.Fetched:
		result = PollFetched
	}
	pollsCounter.WithLabelValues(key.Namespace, key.Name, result).Inc()
	pollDuration.WithLabelValues(result).Observe(time.Since(start).Seconds())
	if err == nil {
		lastPollSuccess.WithLabelValues(key.Namespace, key.Name).SetToCurrentTime()
	}
}

// forgetPolls drops the series of a deleted GitSource.
func forgetPolls(key Key) {
	labels := prometheus.Labels{"namespace": key.Namespace, "name": key.Name}
	pollsCounter.DeletePartialMatch(labels)
	lastPollSuccess.DeletePartialMatch(labels)
}
