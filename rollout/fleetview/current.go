package fleetview

import (
	"time"

	"github.com/convoy-gitops/convoy/rollout"
)

// CurrentPlan runs the planner once on snap as of now, with the stored update revision (or the
// GitSource's commit when none is stored yet): what the controller would conclude about every
// target at this instant. The dashboard reads the state of each cell, the failures, the skipped
// targets and the budget from it. snap must come from Read.
func CurrentPlan(snap *Snapshot, now time.Time) (*rollout.Plan, rollout.Input, error) {
	in, err := forecastInput(snap, ForecastOptions{Now: now})
	if err != nil {
		return nil, in, err
	}
	plan, err := rollout.Compute(in)
	return plan, in, err
}
