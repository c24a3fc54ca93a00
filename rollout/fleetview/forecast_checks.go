package fleetview

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/rollout/checks"
)

// forecastCheckValue is the value a check the forecast passes saw.
const forecastCheckValue = "forecast"

// CheckForecast is one check of a partition in a forecast.
type CheckForecast struct {
	// Name of the check.
	Name string `json:"name"`
	// Kind is the check's kind, as rollout/checks registers it: prometheus, alerts or http.
	Kind string `json:"kind"`
	// Passes is when the check passes at the earliest: its first evaluation once its duration
	// after the partition's last Package progressed is over. Nil when the forecast does not
	// get there.
	Passes *metav1.Time `json:"passes,omitempty"`
}

// passChecks records a passing evaluation of every due check whose duration is over, as the
// controller would if the fleet's signals agreed, and notes when each passed. A due check whose
// duration runs on is left for a later pass.
func (s *simulation) passChecks() error {
	due, err := rollout.DueChecks(s.in)
	if err != nil {
		return err
	}
	for _, d := range due {
		if s.in.Now.Before(d.Until) {
			continue
		}
		r := d.Record(rollout.Evaluation{Outcome: rollout.CheckPass, Value: forecastCheckValue, At: s.in.Now})
		s.in.SetCheckResult(d.Partition, r)
		if r.State == convoyv1alpha1.CheckPassed {
			s.gates.noteCheckPassed(d.Partition, d.Check.Name, s.in.Now)
		}
	}
	return nil
}

// noteCheckPassed records that the check name of partition passed at.
func (l *gateLog) noteCheckPassed(partition, name string, at time.Time) {
	if l.passes[partition] == nil {
		l.passes[partition] = map[string]time.Time{}
	}
	l.passes[partition][name] = at
}

// checks returns the checks of partition, in spec order, with when each passed in the
// forecast; a partition that has checks makes the forecast list the partitions.
func (l *gateLog) checks(partition string) []CheckForecast {
	specs := rollout.ChecksOf(l.hcpkg, partition)
	if len(specs) == 0 {
		return nil
	}
	out := make([]CheckForecast, 0, len(specs))
	for i := range specs {
		c := CheckForecast{Name: specs[i].Name, Kind: checks.KindOf(&specs[i])}
		if at, ok := l.passes[partition][c.Name]; ok {
			t := metav1.NewTime(at)
			c.Passes = &t
		}
		out = append(out, c)
	}
	return out
}

// hasChecks reports whether some partition of the log has checks.
func (l *gateLog) hasChecks() bool {
	for _, name := range l.order {
		if len(rollout.ChecksOf(l.hcpkg, name)) > 0 {
			return true
		}
	}
	return false
}

// checksText says when the checks of a partition pass at the earliest: "error-rate, alerts
// pass by 2026-01-02 12:40:00 UTC", or only their names when the forecast does not get there.
func checksText(checks []CheckForecast) string {
	var names string
	var by time.Time
	passed := true
	for i, c := range checks {
		if i > 0 {
			names += ", "
		}
		names += c.Name
		if c.Passes == nil {
			passed = false
		} else {
			by = later(by, c.Passes.Time)
		}
	}
	if !passed || len(checks) == 0 {
		return names
	}
	return names + " pass by " + by.UTC().Format(timeLayout)
}
