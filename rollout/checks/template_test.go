package checks

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// partitionData is the data of a partition of two clusters.
func partitionData() Data {
	return Data{
		HostedClusterPackage: "addon",
		Partition:            "canary",
		Revision:             "addon-7d9f",
		Commit:               "0123abcd",
		HostedClusters: []HostedCluster{
			{Name: "hc-1", Namespace: "clusters", HCPNamespace: "clusters-hc-1", Labels: map[string]string{"tier": "canary"}},
			{Name: "hc-2", Namespace: "clusters", HCPNamespace: "clusters-hc-2", Labels: map[string]string{"tier": "canary"}},
		},
	}
}

func TestTemplateRendersTheData(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"names and regex", `up{hosted_cluster=~"{{ regex (names .HostedClusters) }}"}`, `up{hosted_cluster=~"(?:hc-1|hc-2)"}`},
		{"fields", `{{ .HostedClusterPackage }}/{{ .Partition }}/{{ .Revision }}/{{ .Commit }}`, "addon/canary/addon-7d9f/0123abcd"},
		{"range and labels", `{{ range .HostedClusters }}{{ .HCPNamespace }}:{{ .Labels.tier }} {{ end }}`, "clusters-hc-1:canary clusters-hc-2:canary "},
		{"no action", `sum(up)`, `sum(up)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tt, err := parseTemplate("prometheus.query", tc.text)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := tt.render(partitionData())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestRegexQuotesItemsAndMatchesNothingWhenEmpty(t *testing.T) {
	g := NewWithT(t)
	g.Expect(alternation([]string{"a.b", "c+d", "4.18"})).To(Equal(`(?:a[.]b|c[+]d|4[.]18)`))
	m, err := parseMatcher("m", `x=~"`+alternation(nil)+`"`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.matches(map[string]string{})).To(BeFalse(), "an empty partition must not select series without the label")
	g.Expect(m.matches(map[string]string{"x": ""})).To(BeFalse())
}

func TestTemplateRefusesWhatTheDesignDoesNotAllow(t *testing.T) {
	cases := []struct {
		name, text, parseErr, renderErr string
	}{
		{name: "a builtin function", text: `{{ printf "%s" .Partition }}`, parseErr: `calls the function "printf"`},
		{name: "call", text: `{{ call .Partition }}`, parseErr: `calls the function "call"`},
		{name: "index in a range", text: `{{ range .HostedClusters }}{{ index .Labels "a" }}{{ end }}`, parseErr: `calls the function "index"`},
		{name: "an unknown function", text: `{{ env "HOME" }}`, parseErr: `function "env" not defined`},
		{name: "a field of no data", text: `{{ .Secret }}`, renderErr: "can't evaluate field Secret"},
		{name: "a missing label", text: `{{ range .HostedClusters }}{{ .Labels.token }}{{ end }}`, renderErr: `map has no entry for key "token"`},
		{name: "a syntax error", text: `{{ .Partition `, parseErr: "unclosed action"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tt, err := parseTemplate("alerts.matchers[0]", tc.text)
			if tc.parseErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				_, err = tt.render(partitionData())
			}
			var specErr *SpecError
			g.Expect(errors.As(err, &specErr)).To(BeTrue(), "%v", err)
			g.Expect(specErr.Field).To(Equal("alerts.matchers[0]"))
			g.Expect(specErr.Rule).To(Equal(templateRule))
			g.Expect(err.Error()).To(ContainSubstring(tc.parseErr + tc.renderErr))
		})
	}
}

func TestTemplateOutputIsBounded(t *testing.T) {
	g := NewWithT(t)
	data := partitionData()
	for i := 0; i < 300; i++ {
		data.HostedClusters = append(data.HostedClusters, HostedCluster{Name: strings.Repeat("x", 40)})
	}
	tt, err := parseTemplate("prometheus.query", `{{ range .HostedClusters }}{{ range $.HostedClusters }}{{ .Name }}{{ end }}{{ end }}`)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = tt.render(data)
	g.Expect(err).To(MatchError(ContainSubstring("renders more than 65536 bytes")))
}

func TestRegexMatchesEachItemLiterally(t *testing.T) {
	const metacharacters = `.+*?()|[]{}^$\`
	for _, c := range metacharacters {
		t.Run(string(c), func(t *testing.T) {
			g := NewWithT(t)
			item := "a" + string(c) + "b"
			re, err := regexp.Compile("^" + alternation([]string{item, "other"}) + "$")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(re.MatchString(item)).To(BeTrue())
			g.Expect(re.MatchString("other")).To(BeTrue())
			g.Expect(re.MatchString("axb")).To(BeFalse())
			g.Expect(re.MatchString("ab")).To(BeFalse())
			g.Expect(re.MatchString(item + item)).To(BeFalse())
		})
	}
}
