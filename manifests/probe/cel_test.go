package probe

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestCompileCELRefusesAQuadraticRule(t *testing.T) {
	g := NewWithT(t)
	_, err := CompileCEL("self.data.all(k, self.data.all(l, self.data[k] != self.data[l] || k == l))", "distinct values")
	g.Expect(err).To(MatchError(MatchRegexp(`^is too expensive: its estimated worst-case cost \d+ exceeds the limit 1000000 ` +
		`\(lists, maps and strings of the object assumed to hold up to 1024 elements\); avoid comprehensions nested in comprehensions$`)))
}

func TestCompileCELAcceptsALinearRule(t *testing.T) {
	g := NewWithT(t)
	for _, rule := range []string{
		"has(self.status) && self.status.phase == 'Active'",
		"self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
		"self.data.all(k, self.data[k].startsWith('v'))",
	} {
		_, err := CompileCEL(rule, "m")
		g.Expect(err).NotTo(HaveOccurred(), rule)
	}
}

func TestCELEvaluationStopsAtTheCostLimit(t *testing.T) {
	g := NewWithT(t)
	c, err := CompileCEL("self.data.all(k, self.data[k].contains('needle'))", "no needle")
	g.Expect(err).NotTo(HaveOccurred())
	data := map[string]any{}
	for i := range 200 {
		data[fmt.Sprintf("k%03d", i)] = strings.Repeat("hay", 100_000) + "needle"
	}
	start := time.Now()
	_, err = c.Eval(map[string]any{"data": data})
	g.Expect(err).To(MatchError(ContainSubstring("stopped at the cost limit of 1000000 per evaluation")))
	g.Expect(time.Since(start)).To(BeNumerically("<", time.Second))
}
