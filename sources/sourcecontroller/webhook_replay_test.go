package sourcecontroller

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// TestReplayCacheRemembersABodyForItsWindow: a body is claimed once per GitSource within the
// window, again after it; another GitSource's same body is its own; a released claim (a failed
// patch) is heard again; the cache never holds more than maxReplayEntries.
func TestReplayCacheRemembersABodyForItsWindow(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	c := newReplayCache(10*time.Minute, func() time.Time { return now })
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	body := []byte(`{"after":"c2"}`)

	g.Expect(c.claim(replayKey(a, body))).To(BeTrue(), "the first call")
	g.Expect(c.claim(replayKey(a, body))).To(BeFalse(), "a replay")
	g.Expect(c.claim(replayKey(b, body))).To(BeTrue(), "another GitSource")
	g.Expect(c.claim(replayKey(a, []byte(`{"after":"c3"}`)))).To(BeTrue(), "another body")
	now = now.Add(10 * time.Minute)
	g.Expect(c.claim(replayKey(a, body))).To(BeTrue(), "after the window")
	g.Expect(c.len()).To(Equal(1), "the expired calls are dropped")

	c.release(replayKey(a, body))
	g.Expect(c.claim(replayKey(a, body))).To(BeTrue(), "a released claim is heard again")

	for i := range maxReplayEntries + 100 {
		c.claim(replayKey(a, fmt.Appendf(nil, "body %d", i)))
	}
	g.Expect(c.len()).To(Equal(maxReplayEntries))
	g.Expect(c.claim(replayKey(a, []byte("body 0")))).To(BeTrue(), "the oldest were dropped first")
	g.Expect(c.claim(replayKey(a, fmt.Appendf(nil, "body %d", maxReplayEntries+99)))).To(BeFalse(), "the newest are kept")
}
