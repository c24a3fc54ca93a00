package manifests

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestHostileChartsAreBounded loads each hostile chart of testdata/hostile: a template that
// never ends, a packaged chart expanding to 2 GiB, an archive reaching above its root, and a
// template asking lookup and .Files for what lies outside the chart. Each is refused within
// seconds, blamed on the chart, while the test process's memory stays put.
func TestHostileChartsAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		rule       Rule
		want       string
	}{
		{"chart-endless", "chart", RuleLimit, "rendering was stopped: it used more than 2s of CPU time"},
		{"chart-bomb", "bomb.tgz", RuleChart, "decompressed chart is larger than the maximum size 67108864"},
		{"chart-traversal", "traversal.tgz", RuleChart, "chart illegally references parent directory"},
		{"chart-outside", "chart/templates/configmap.yaml", RuleTemplate, "lookup and .Files found nothing outside the chart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			errs, took, grew := loadHostile(t, tc.name, hostileBudget)
			g.Expect(errs).To(haveProblem(tc.file, tc.rule, tc.want))
			g.Expect(errs).To(HaveLen(1))
			g.Expect(took).To(BeNumerically("<", 30*time.Second))
			g.Expect(grew).To(BeNumerically("<", 16<<20), "the test process's heap grew")
		})
	}
	_, err := os.Stat("/tmp/convoy-escaped.yaml")
	NewWithT(t).Expect(os.IsNotExist(err)).To(BeTrue(), "the archive's entry was written outside")
}
