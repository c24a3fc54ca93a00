package bench

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestMachineCPUIsReadFromProcStat: the machine's busy time is part of its total, and both grow.
func TestMachineCPUIsReadFromProcStat(t *testing.T) {
	g := NewWithT(t)
	before, err := readMachineCPU()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(before.busy).To(BeNumerically(">", 0))
	g.Expect(before.busy).To(BeNumerically("<=", before.total))
	time.Sleep(20 * time.Millisecond)
	after, err := readMachineCPU()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.sub(before).busy).To(BeNumerically(">=", 0))
	g.Expect(after.total).To(BeNumerically(">=", before.total))
}

// TestWaitAccountSplitsTheGapIntoCPUAndCores: the gap to the floor is convoy's CPU beyond the
// floor's, at the rate the floor used, plus the cores the step got fewer than the floor did.
func TestWaitAccountSplitsTheGapIntoCPUAndCores(t *testing.T) {
	g := NewWithT(t)
	keep := window{wall: 20 * time.Second, serverCPU: 30 * time.Second, benchCPU: 2 * time.Second,
		machine: machineCPU{busy: 36 * time.Second, total: 40 * time.Second}}
	step := window{wall: 30 * time.Second, serverCPU: 36 * time.Second, cpu: 10 * time.Second, benchCPU: 2 * time.Second,
		machine: machineCPU{busy: 57 * time.Second, total: 60 * time.Second}}
	a := waitAccount{wall: step.wall, floor: keep.wall, step: step, keep: keep}
	g.Expect(a.floorRate()).To(BeNumerically("~", 1.6, 1e-9))
	g.Expect(a.extraCPUTime()).To(Equal(10 * time.Second)) // (48 s - 32 s) / 1.6 cores
	g.Expect(a.rateShortfall()).To(Equal(0 * time.Second))
	g.Expect(step.othersCPU()).To(Equal(9 * time.Second))
	g.Expect(step.idleCPU()).To(Equal(3 * time.Second))

	a.wall += 5 * time.Second
	g.Expect(a.extraCPUTime() + a.rateShortfall()).To(Equal(a.wall - a.floor))
}

// TestWaitAccountOfAPackagePass: the workers' busy time is their work seconds shared among
// them, idle what is left after the first pin, and the passes beyond one per Package cost the
// mean pass time.
func TestWaitAccountOfAPackagePass(t *testing.T) {
	g := NewWithT(t)
	a := waitAccount{wall: 30 * time.Second, workers: 4, packages: 100, firstPin: time.Second,
		counters: waitCounters{packagePasses: 120, packageWork: 96, packageQueued: 12}}
	g.Expect(a.busy()).To(Equal(24 * time.Second))
	g.Expect(a.idle()).To(Equal(5 * time.Second))
	g.Expect(a.extraPasses()).To(BeNumerically("==", 20))
	g.Expect(a.extraPassTime()).To(Equal(4 * time.Second)) // 20 passes of 0.8 s on 4 workers
	g.Expect(a.queuedPerPass()).To(Equal(100 * time.Millisecond))
}
