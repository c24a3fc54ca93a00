package synccontroller

import (
	"fmt"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// recordResult writes what the engine did into the status: phases, inventory, the revision
// once available, and the Available condition.
func recordResult(s *scope, err error) {
	res := s.result
	if res == nil {
		return
	}
	s.status.Phases = res.Phases
	s.status.Inventory = res.Inventory
	if res.Available {
		s.status.Revision = s.revision.ID
	}
	setAvailableCondition(s, err)
}

// setAvailableCondition sets Available from the last engine pass: True when every phase of the
// revision is available, False with the reason and message of what stopped the pass.
func setAvailableCondition(s *scope, err error) {
	if s.result != nil && s.result.Available {
		pass.MarkTrue(s.obj, convoyv1alpha1.AvailableCondition, convoyv1alpha1.RevisionAvailableReason,
			"All %d phases of revision %s are available", len(s.result.Phases), s.revision.ID)
		return
	}
	if err == nil {
		return
	}
	pass.MarkFalse(s.obj, convoyv1alpha1.AvailableCondition, pass.ReasonOf(err), "%s", err.Error())
}

// setProgressingCondition sets Progressing: False once the desired revision is the available
// status.revision, True with what is under way (or in the way) otherwise. An empty desired
// revision (not known yet) leaves it alone unless the pass failed.
func setProgressingCondition(s *scope, desired string, err error) {
	switch {
	case s.done:
		return
	case err == nil && desired != "" && desired == s.status.Revision:
		pass.MarkFalse(s.obj, convoyv1alpha1.ProgressingCondition, convoyv1alpha1.RevisionAvailableReason,
			"Revision %s is available", desired)
	case err != nil:
		pass.MarkTrue(s.obj, convoyv1alpha1.ProgressingCondition, pass.ReasonOf(err), "%s", progressMessage(desired, err))
	case desired != "":
		pass.MarkTrue(s.obj, convoyv1alpha1.ProgressingCondition, convoyv1alpha1.ProgressingReason,
			"Applying revision %s", desired)
	}
}

// progressMessage says what holds the desired revision back.
func progressMessage(desired string, err error) string {
	if desired == "" {
		return err.Error()
	}
	return fmt.Sprintf("Revision %s: %v", desired, err)
}
