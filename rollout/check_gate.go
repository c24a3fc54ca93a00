package rollout

import (
	"fmt"
	"time"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/checks"
)

// partitionChecks are a partition's checks and their results at the update revision.
type partitionChecks struct {
	// specs are the partition's checks (checksOf), in spec order.
	specs []convoyv1alpha1.RolloutCheck
	// results holds, by check name, the results at the update revision.
	results map[string]*convoyv1alpha1.CheckStatus
	// failed is the first check of specs whose result is Failed; nil when none is.
	failed *convoyv1alpha1.RolloutCheck
}

// loadChecks gives each partition its checks and their results at the update revision; results
// of another revision, or of a check no longer in the spec, are dropped.
func (p *planner) loadChecks() {
	for _, part := range p.partitions {
		part.checks.specs = p.checksOf(part)
		part.checks.results = map[string]*convoyv1alpha1.CheckStatus{}
		for i := range p.in.CheckResults[part.name] {
			r := &p.in.CheckResults[part.name][i]
			if r.Revision == p.in.UpdateRevision.Name {
				part.checks.results[r.Name] = r
			}
		}
		for i := range part.checks.specs {
			c := &part.checks.specs[i]
			if r := part.checks.results[c.Name]; r != nil && r.State == convoyv1alpha1.CheckFailed && part.checks.failed == nil {
				part.checks.failed = c
			}
		}
	}
}

// checksOf returns the checks of part (see ChecksOf).
func (p *planner) checksOf(part *partition) []convoyv1alpha1.RolloutCheck {
	return ChecksOf(p.in.HostedClusterPackage, part.name)
}

// ChecksOf returns the checks of the partition of h called partition: its policy's when not
// empty, none when its policy says skipChecks, else spec.checks.
func ChecksOf(h *convoyv1alpha1.HostedClusterPackage, partition string) []convoyv1alpha1.RolloutCheck {
	var pol *convoyv1alpha1.PartitionPolicy
	if spec := h.Spec.Partition; spec != nil {
		for i := range spec.Policies {
			if spec.Policies[i].Name == partition {
				pol = &spec.Policies[i]
			}
		}
	}
	switch {
	case pol != nil && pol.SkipChecks:
		return nil
	case pol != nil && len(pol.Checks) > 0:
		return pol.Checks
	}
	return h.Spec.Checks
}

// checksApply reports whether checks judge the update revision: it is not the completed current
// revision, nor rejected.
func (p *planner) checksApply() bool {
	cur := p.in.CurrentRevision
	return !p.rejected && (cur == nil || cur.Name != p.in.UpdateRevision.Name)
}

// checksStarted reports whether part's checks run: they apply, the partition passed (every
// eligible target progressed, or failed within the tolerance), and one of its Packages
// progressed at the update revision. A partition where none did has nothing to judge.
func (p *planner) checksStarted(part *partition) bool {
	return p.checksApply() && part.passed && len(part.checks.specs) > 0 && !p.lastProgressed(part).IsZero()
}

// checksOutstanding reports whether part's checks started and one has not passed: it runs, is
// Inconclusive, or has failed.
func (p *planner) checksOutstanding(part *partition) bool {
	if !p.checksStarted(part) {
		return false
	}
	for _, c := range part.checks.specs {
		if r := part.checks.results[c.Name]; r == nil || r.State != convoyv1alpha1.CheckPassed {
			return true
		}
	}
	return false
}

// checksPassed reports whether nothing of part's checks holds the rollout: they do not apply,
// the partition has none or nothing to judge, or every one passed.
func (p *planner) checksPassed(part *partition) bool {
	return part.checks.failed == nil && !p.checksOutstanding(part)
}

// checkHold returns the Check gate of part while the checks of an earlier partition have not
// all passed (under a rolling upgrade; the instant strategy has no barrier); nil otherwise.
func (p *planner) checkHold(part *partition) *convoyv1alpha1.RolloutGate {
	if p.instant {
		return nil
	}
	for _, prev := range p.partitions[:part.index] {
		if p.checksOutstanding(prev) {
			return &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateCheck, Partition: part.name,
				Until: metaTime(p.checksUntil(prev)),
				Message: fmt.Sprintf("Partition %s starts when partition %s has passed its checks: %s.",
					part.name, prev.name, p.outstandingCheck(prev))}
		}
	}
	return nil
}

// markChecking shows Checking on every partition whose checks are outstanding and that no gate
// shows otherwise (a soak), until its longest check's duration ends; and, when nothing else
// holds the rollout, names the first one in a Check gate: its checks hold the completion.
func (p *planner) markChecking() {
	for _, part := range p.partitions {
		if !p.checksOutstanding(part) || part.shown != "" {
			continue
		}
		part.shown, part.until = convoyv1alpha1.PartitionChecking, p.checksUntil(part)
		if p.gate == nil {
			p.gate = &convoyv1alpha1.RolloutGate{Type: convoyv1alpha1.GateCheck, Partition: part.name,
				Until: metaTime(part.until),
				Message: fmt.Sprintf("Revision %s completes when partition %s has passed its checks: %s.",
					p.in.UpdateRevision.Name, part.name, p.outstandingCheck(part))}
		}
	}
}

// checksUntil returns when the longest duration of part's checks that have not passed ends;
// zero when that is not after Input.Now.
func (p *planner) checksUntil(part *partition) time.Time {
	start := p.lastProgressed(part)
	var until time.Time
	for _, c := range part.checks.specs {
		if r := part.checks.results[c.Name]; r == nil || r.State != convoyv1alpha1.CheckPassed {
			until = latest(until, start.Add(c.Duration()))
		}
	}
	if !until.After(p.in.Now) {
		return time.Time{}
	}
	return until
}

// outstandingCheck describes the first check of part that has not passed.
func (p *planner) outstandingCheck(part *partition) string {
	for _, c := range part.checks.specs {
		r := part.checks.results[c.Name]
		switch {
		case r == nil:
			return fmt.Sprintf("check %s has not been evaluated yet", c.Name)
		case r.State == convoyv1alpha1.CheckInconclusive:
			return fmt.Sprintf("check %s is inconclusive (%d evaluations in a row, inconclusiveLimit %d): %s",
				c.Name, r.Inconclusive, c.InconclusiveLimit, r.Message)
		case r.State != convoyv1alpha1.CheckPassed:
			return fmt.Sprintf("check %s is %s (%d passed, %d failed, failureLimit %d)",
				c.Name, r.State, r.Passes, r.Failures, c.FailureLimit)
		}
	}
	return "every check passed"
}

// checkFailure returns the failure of part's failed check, for Plan.Failed: it names the
// check, what it asks and what it saw.
func (p *planner) checkFailure(part *partition) convoyv1alpha1.PackageFailure {
	c := part.checks.failed
	r := part.checks.results[c.Name]
	msg := fmt.Sprintf("Check %s of partition %s failed (%d failed evaluations, failureLimit %d): %s saw %q",
		c.Name, part.name, r.Failures, c.FailureLimit, checks.Subject(c), r.LastValue)
	if r.Message != "" {
		msg += ": " + r.Message
	}
	return convoyv1alpha1.PackageFailure{Partition: part.name, Check: c.Name,
		Reason: convoyv1alpha1.CheckFailedReason, Message: msg}
}

// checkStatuses returns the results of part's checks at the update revision, in spec order,
// for status.partitions[].checks.
func (p *planner) checkStatuses(part *partition) []convoyv1alpha1.CheckStatus {
	var out []convoyv1alpha1.CheckStatus
	for _, c := range part.checks.specs {
		if r := part.checks.results[c.Name]; r != nil {
			out = append(out, *r.DeepCopy())
		}
	}
	return out
}
