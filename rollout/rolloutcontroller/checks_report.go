package rolloutcontroller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// Event reasons of the rollout's checks.
const (
	// CheckPassedReason: a check of a partition passed at the update revision.
	CheckPassedReason = "CheckPassed"
	// CheckFailedReason: a check of a partition failed at the update revision, which stops the
	// rollout (or rolls it back).
	CheckFailedReason = convoyv1alpha1.CheckFailedReason
	// CheckInconclusiveReason: a check became Inconclusive, which holds the rollout until an
	// evaluation is conclusive.
	CheckInconclusiveReason = convoyv1alpha1.CheckInconclusiveReason
)

// reportChecks announces, by an event and a log line, each check of the update revision whose
// state changed to Passed, Failed or Inconclusive since the status the pass started from: so a
// check fails once per check and revision, and becomes inconclusive once per run of
// inconclusive evaluations. Messages name the partition and the check; the checks' values and
// messages hold no credential (rollout/checks scrubs them).
func (r *HostedClusterPackageReconciler) reportChecks(ctx context.Context, s *scope) {
	before := checkStatesOf(s.before)
	log := ctrl.LoggerFrom(ctx)
	rev := s.obj.Status.UpdateRevision
	for _, p := range s.obj.Status.Partitions {
		for _, c := range p.Checks {
			if c.Revision != rev || before[p.Name+"/"+c.Name+"@"+c.Revision] == c.State {
				continue
			}
			eventType, reason, text := checkAnnouncement(s.plan, p.Name, &c)
			if reason == "" {
				continue
			}
			r.event(s, eventType, reason, "%s", text)
			log.Info(checkLogLines[reason], "partition", p.Name, "check", c.Name, "revision", rev, "commit", s.update.Commit,
				"value", c.LastValue, "message", text)
		}
	}
}

// checkLogLines are the log lines of the check events, by reason.
var checkLogLines = map[string]string{CheckPassedReason: "Check passed", CheckFailedReason: "Check failed",
	CheckInconclusiveReason: "Check inconclusive"}

// checkStatesOf returns the state of each check in st, by "partition/check@revision".
func checkStatesOf(st *convoyv1alpha1.HostedClusterPackageStatus) map[string]string {
	out := map[string]string{}
	for _, p := range st.Partitions {
		for _, c := range p.Checks {
			out[p.Name+"/"+c.Name+"@"+c.Revision] = c.State
		}
	}
	return out
}

// checkAnnouncement returns the event type, reason and text that announce check c of partition
// newly in its state; no reason for Running, which is not announced.
func checkAnnouncement(plan *rollout.Plan, partition string, c *convoyv1alpha1.CheckStatus) (string, string, string) {
	switch c.State {
	case convoyv1alpha1.CheckPassed:
		return corev1.EventTypeNormal, CheckPassedReason, fmt.Sprintf("Check %s of partition %s passed at revision %s (%d passed, %d failed): saw %q",
			c.Name, partition, c.Revision, c.Passes, c.Failures, c.LastValue)
	case convoyv1alpha1.CheckFailed:
		return corev1.EventTypeWarning, CheckFailedReason, checkFailureMessage(plan, partition, c)
	case convoyv1alpha1.CheckInconclusive:
		return corev1.EventTypeWarning, CheckInconclusiveReason, fmt.Sprintf(
			"Check %s of partition %s is inconclusive at revision %s (%d evaluations in a row), which holds the rollout: %s",
			c.Name, partition, c.Revision, c.Inconclusive, rollout.BoundSample(c.Message))
	}
	return "", "", ""
}

// checkFailureMessage returns the planner's message of the failure of check c of partition,
// which names what the check asks and the value it saw, or one made from c.
func checkFailureMessage(plan *rollout.Plan, partition string, c *convoyv1alpha1.CheckStatus) string {
	for _, f := range plan.Failed {
		if f.Partition == partition && f.Check == c.Name {
			return rollout.BoundSample(f.Message)
		}
	}
	return rollout.BoundSample(fmt.Sprintf("Check %s of partition %s failed at revision %s (%d failed evaluations): saw %q: %s",
		c.Name, partition, c.Revision, c.Failures, c.LastValue, c.Message))
}
