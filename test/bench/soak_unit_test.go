package bench

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The slope is the least-squares one, and the verdict compares its growth over the last half
// with a tenth of the half's mean (plus the series' slack).
func TestSoakSlopesJudgeGrowthOverTheLastHalf(t *testing.T) {
	g := NewWithT(t)
	slope, mean := leastSquares([]float64{0, 1, 2, 3}, []float64{1, 3, 5, 7})
	g.Expect(slope).To(BeNumerically("~", 2, 1e-9))
	g.Expect(mean).To(BeNumerically("~", 4, 1e-9))

	samples := func(rss func(i int) int64) []SoakSample {
		var out []SoakSample
		for i := range 40 {
			out = append(out, SoakSample{At: float64(i * 10), RSS: rss(i), Goroutines: 100, FDs: 20})
		}
		return out
	}
	flat := slopes(samples(func(i int) int64 { return 100<<20 + int64(i%2)<<20 }))
	g.Expect(flat[0].Series).To(Equal("rss"))
	g.Expect(flat[0].Passed).To(BeTrue(), "noise of 1 MiB around 100 MiB")
	leak := slopes(samples(func(i int) int64 { return 100<<20 + int64(i)<<20 }))
	g.Expect(leak[0].Passed).To(BeFalse(), "1 MiB more every sample: 19 MiB over the half")
	g.Expect(leak[2].Passed).To(BeTrue(), "goroutines flat")
}

// The picture has one line per series and says the seed.
func TestSoakPictureDrawsEverySeries(t *testing.T) {
	g := NewWithT(t)
	r := &SoakResults{Seed: 7, Samples: []SoakSample{{At: 0, RSS: 1 << 20, Objects: map[string]int{"Package": 3}},
		{At: 10, RSS: 2 << 20, Objects: map[string]int{"Package": 4}}}, Events: []SoakEvent{{At: 5, Name: "commit"}}}
	var b strings.Builder
	g.Expect(WriteSoakSVG(&b, r)).To(Succeed())
	g.Expect(b.String()).To(HavePrefix("<svg"))
	g.Expect(b.String()).To(ContainSubstring("seed 7"))
	lines := 0
	for _, p := range soakPanels {
		lines += len(p.series)
	}
	g.Expect(strings.Count(b.String(), "<polyline")).To(Equal(lines))
}

func TestSoakBudgetLetsChangesFinishWhenTheFleetShrinks(t *testing.T) {
	g := NewWithT(t)
	set := func(ns ...string) map[string]bool {
		out := map[string]bool{}
		for _, n := range ns {
			out[n] = true
		}
		return out
	}
	var w *budgetWatch
	w = w.observe(2, set("a", "b"))
	g.Expect(w.grandfathered(set("a", "b"))).To(BeFalse(), "within the budget: nothing to excuse")
	w = w.observe(1, set("a", "b")) // a cluster deleted: 20 → 19 clusters, budget 2 → 1
	g.Expect(w.grandfathered(set("a", "b"))).To(BeTrue(), "changes started before the shrink may finish")
	w = w.observe(1, set("a", "b"))
	g.Expect(w.grandfathered(set("a", "b"))).To(BeTrue(), "still finishing")
	w = w.observe(1, set("a", "c"))
	g.Expect(w.grandfathered(set("a", "c"))).To(BeFalse(), "c started over the shrunk budget")
	w = w.observe(1, set("a"))
	w = w.observe(1, set("a", "d"))
	g.Expect(w.grandfathered(set("a", "d"))).To(BeFalse(), "back within the budget, nothing stays excused")

	var v *budgetWatch
	v = v.observe(2, set("a"))
	v = v.observe(1, set("a", "b", "c"))
	g.Expect(v.grandfathered(set("a", "b", "c"))).To(BeFalse(), "more than the budget before the shrink")
}
