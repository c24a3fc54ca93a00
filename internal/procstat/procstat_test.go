package procstat

import (
	"os"
	"runtime"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestPeakRSSReadsItselfAndAPid: the calling process has a peak resident set, the same read
// through its own pid, and a pid that does not exist is an error.
func TestPeakRSSReadsItselfAndAPid(t *testing.T) {
	g := NewWithT(t)
	self, err := PeakRSS(Self)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(self).To(BeNumerically(">", 1<<20))
	byPid, err := PeakRSS(os.Getpid())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byPid).To(BeNumerically(">=", self))
	_, err = PeakRSS(1 << 30)
	g.Expect(err).To(HaveOccurred())
}

// TestThreadCPUCountsTheThreadsWork: a goroutine locked to its thread sees the CPU it spends
// there, and not the wall time it sleeps.
func TestThreadCPUCountsTheThreadsWork(t *testing.T) {
	g := NewWithT(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, ok := ThreadCPU()
	g.Expect(ok).To(BeTrue())
	time.Sleep(100 * time.Millisecond)
	slept, _ := ThreadCPU()
	g.Expect(slept-before).To(BeNumerically("<", 50*time.Millisecond), "sleeping")
	// Spin until the thread has used 30 ms, however loaded the machine, or 10 s have passed.
	busy := slept
	for start := time.Now(); busy-slept < 30*time.Millisecond && time.Since(start) < 10*time.Second; {
		busy, _ = ThreadCPU()
	}
	g.Expect(busy-slept).To(BeNumerically(">=", 30*time.Millisecond), "spinning")
}
