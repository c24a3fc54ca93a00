package procstat

import (
	"os"
	"testing"

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
