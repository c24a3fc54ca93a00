package rolloutcontroller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/rollout/commitstatus"
	"github.com/convoy-gitops/convoy/rollout/promotion"
)

// TestCommitStatusSaysWhatTheRecordSays: each state of a promotion record, posted as a commit
// status and read back from the forge, is the same state, with the forge's time; a success
// that a non-publishing controller posted proves nothing and reads as Progressing.
func TestCommitStatusSaysWhatTheRecordSays(t *testing.T) {
	at := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	for _, state := range []promotion.State{promotion.Progressing, promotion.Completed, promotion.Failed, promotion.Rejected} {
		t.Run(string(state), func(t *testing.T) {
			g := NewWithT(t)
			posted, description := recordState(promotion.CommitRecord{Commit: "c1", State: state}, "1/2 partitions, 3/4 clusters")
			got, ok := observedRecord("c1", commitstatus.Observed{State: posted, Description: description, At: at})
			g.Expect(ok).To(BeTrue())
			g.Expect(got).To(Equal(promotion.CommitRecord{Commit: "c1", State: state, StartedAt: at, Since: at}))
		})
	}
	t.Run("superseded and foreign states", func(t *testing.T) {
		g := NewWithT(t)
		got, ok := observedRecord("c1", commitstatus.Observed{State: commitstatus.Superseded, At: at})
		g.Expect(ok).To(BeTrue())
		g.Expect(got.State).To(Equal(promotion.Superseded))
		got, ok = observedRecord("c1", commitstatus.Observed{State: commitstatus.Success, Description: "3/3 partitions", At: at})
		g.Expect(ok).To(BeTrue())
		g.Expect(got.State).To(Equal(promotion.Progressing), "a success without the Completed prefix is not a completion")
		_, ok = observedRecord("c1", commitstatus.Observed{State: "", At: at})
		g.Expect(ok).To(BeFalse())
	})
}

// TestEarliestTakesTheSoonerWake: a zero time is no wake.
func TestEarliestTakesTheSoonerWake(t *testing.T) {
	g := NewWithT(t)
	a, b := time.Unix(10, 0), time.Unix(20, 0)
	g.Expect(earliest(a, b)).To(Equal(a))
	g.Expect(earliest(b, a)).To(Equal(a))
	g.Expect(earliest(time.Time{}, b)).To(Equal(b))
	g.Expect(earliest(a, time.Time{})).To(Equal(a))
}
