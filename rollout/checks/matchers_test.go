package checks

import (
	"errors"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
)

func TestMatcherParsesTheFourForms(t *testing.T) {
	labels := map[string]string{"severity": "critical", "hosted_cluster": "hc-1"}
	cases := []struct {
		text, canonical string
		match           bool
	}{
		{`severity="critical"`, `severity="critical"`, true},
		{` severity != "warning" `, `severity!="warning"`, true},
		{`hosted_cluster=~"(?:hc-1|hc-2)"`, `hosted_cluster=~"(?:hc-1|hc-2)"`, true},
		{`hosted_cluster!~"hc-.*"`, `hosted_cluster!~"hc-.*"`, false},
		{`hosted_cluster=~"hc"`, `hosted_cluster=~"hc"`, false}, // anchored
		{`team=""`, `team=""`, true},                            // missing label is empty
		{`msg="say \"hi\"\\"`, `msg="say \"hi\"\\"`, false},
		{`host=~"a\.b"`, `host=~"a\\.b"`, false}, // a regexp escape survives
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			g := NewWithT(t)
			m, err := parseMatcher("alerts.matchers[0]", tc.text)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m.String()).To(Equal(tc.canonical))
			g.Expect(m.matches(labels)).To(Equal(tc.match))
			again, err := parseMatcher("x", m.String())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again.value).To(Equal(m.value), "the canonical form parses back to the same value")
		})
	}
}

func TestMatcherRefusesOtherForms(t *testing.T) {
	for _, text := range []string{
		`severity=critical`, `severity == "critical"`, `{severity="critical"}`, `severity="a",team="b"`,
		`1abc="x"`, `severity="unterminated`, `severity=~"(unclosed"`, ``,
	} {
		t.Run(text, func(t *testing.T) {
			g := NewWithT(t)
			_, err := parseMatcher("alerts.matchers[2]", text)
			var specErr *SpecError
			g.Expect(errors.As(err, &specErr)).To(BeTrue(), "%v", err)
			g.Expect(specErr.Field).To(Equal("alerts.matchers[2]"))
			g.Expect(specErr.Rule).To(Equal(matcherRule))
			g.Expect(err.Error()).To(ContainSubstring(strconv.Quote(text)))
		})
	}
}
