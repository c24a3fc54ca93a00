package checks

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestConditionJudgesTheAnswer(t *testing.T) {
	answer := []series{
		{Metric: map[string]string{"hosted_cluster": "hc-1"}, Value: 0.02},
		{Metric: map[string]string{"hosted_cluster": "hc-2"}, Value: 0.3},
	}
	cases := []struct {
		name, expr string
		answer     []series
		want       bool
	}{
		{"all values below", "values.all(v, v < 0.1)", answer, false},
		{"all values below a higher bound", "values.all(v, v < 0.5)", answer, true},
		{"a series by label", `result.exists(r, r.metric.hosted_cluster == "hc-2" && r.value > 0.1)`, answer, true},
		{"empty answer, condition decides", "size(result) == 0", nil, true},
		{"empty answer, all() holds", "values.all(v, v < 0.1)", nil, true},
		{"scalar", "values[0] == 1.0", []series{{Value: 1}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := compileCondition("prometheus.successCondition", tc.expr)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := c.eval(tc.answer)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestConditionRefusedAtCompile(t *testing.T) {
	cases := []struct{ name, expr, want string }{
		{"syntax", "values.all(v, v <", "does not compile"},
		{"not a bool", "size(values)", "returns int"},
		{"unknown variable", "self.x", "undeclared reference to 'self'"},
		{"nested comprehensions", "result.all(a, result.all(b, values.all(c, a.value + b.value + c > 0.0)))", "is too expensive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := compileCondition("prometheus.successCondition", tc.expr)
			var specErr *SpecError
			g.Expect(errors.As(err, &specErr)).To(BeTrue(), "%v", err)
			g.Expect(specErr.Field).To(Equal("prometheus.successCondition"))
			g.Expect(specErr.Rule).To(Equal(conditionRule))
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
		})
	}
}

func TestConditionErrorsAtEvaluation(t *testing.T) {
	g := NewWithT(t)
	c, err := compileCondition("prometheus.successCondition", "values[0] < 0.1")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.eval(nil)
	g.Expect(err).To(MatchError(ContainSubstring("index")))

	c, err = compileCondition("prometheus.successCondition", `result[0].metric.missing == "x"`)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.eval([]series{{Metric: map[string]string{}}})
	g.Expect(err).To(MatchError(ContainSubstring("no such key")))
}
