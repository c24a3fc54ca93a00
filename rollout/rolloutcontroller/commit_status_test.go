package rolloutcontroller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/rollout/commitstatus"
)

// TestCommitStateFollowsThePassOutcome checks the state and description a pass hands to the
// commit status reporter: failure with a fixed summary (reason, partition) when it stalls, success when it completed,
// pending with partitions and clusters otherwise.
func TestCommitStateFollowsThePassOutcome(t *testing.T) {
	plan := &rollout.Plan{
		Partitions: []convoyv1alpha1.PartitionStatus{{Name: "early", State: convoyv1alpha1.PartitionDone},
			{Name: "normal", State: convoyv1alpha1.PartitionDone}, {Name: "late"}},
		Counts: rollout.Counts{Total: 1000, Progressed: 412},
	}
	s := &scope{plan: plan}
	cases := []struct {
		name  string
		err   error
		state commitstatus.State
		desc  string
	}{
		{"progressing", pass.Waitf(convoyv1alpha1.ProgressingReason, 0, "Rolling out"), commitstatus.Pending,
			"2/3 partitions, 412/1000 clusters"},
		{"transient error", pass.Retryf("ListFailed", "listing Packages"), commitstatus.Pending,
			"2/3 partitions, 412/1000 clusters"},
		{"stalled", pass.StallAfterf(convoyv1alpha1.RolloutBlockedReason, time.Minute, "Rollout is blocked: 1 package(s) failed"),
			commitstatus.Failure, "Stalled (RolloutBlocked) in partition late"},
		{"completed", nil, commitstatus.Success, "2/3 partitions, 412/1000 clusters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			state, desc := commitState(s, tc.err)
			g.Expect(state).To(Equal(tc.state))
			g.Expect(desc).To(Equal(tc.desc))
		})
	}
}
