package checks

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

func TestDescribeNamesWhatTheCheckLooksAt(t *testing.T) {
	cases := []struct {
		spec Spec
		want string
	}{
		{errorRatioCheck("http://prom:9090"), "query `convoy_test_addon_error_ratio{hosted_cluster=~\"{{ regex (names .HostedClusters) }}\"}` at http://prom:9090"},
		{partitionAlertsCheck("http://am:9093/"), `alerts matching [hosted_cluster=~"{{ regex (names .HostedClusters) }}" severity="critical"] at http://am:9093/`},
		{&HTTPCheck{URL: "https://hook.example/gate?p=1"}, "POST https://hook.example/gate?p=1"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			g := NewWithT(t)
			c, err := Compile(tc.spec)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Describe()).To(Equal(tc.want))
		})
	}
}

func FuzzParseMatcher(f *testing.F) {
	for _, seed := range []string{`a="b"`, `a!~"x|y"`, `a=~"\\."`, `a="\""`, `a=~"(?:"`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		m, err := parseMatcher("m", text)
		if err != nil {
			return
		}
		again, err := parseMatcher("m", m.String())
		if err != nil {
			t.Fatalf("the canonical form %q of %q does not parse: %v", m.String(), text, err)
		}
		if again.name != m.name || again.op != m.op || again.value != m.value {
			t.Fatalf("the canonical form %q of %q parses to %+v, not %+v", m.String(), text, again, m)
		}
	})
}

func TestACompiledCheckIsSharedByConcurrentEvaluations(t *testing.T) {
	g := NewWithT(t)
	prom := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		// The answer holds the cluster the query names: each evaluation must see its own.
		cluster := strings.TrimSuffix(strings.TrimPrefix(r.URL.Query().Get("query"), `up{hosted_cluster=~"(?:`), `)"}`)
		_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"hosted_cluster":%q},"value":[1,"1"]}]}}`, cluster)
	})
	c, err := Compile(&PrometheusCheck{Address: prom.URL,
		Query: `up{hosted_cluster=~"{{ regex (names .HostedClusters) }}"}`, SuccessCondition: "values.all(v, v == 1.0)"})
	g.Expect(err).NotTo(HaveOccurred())
	var wg sync.WaitGroup
	values := make([]string, 8)
	for i := range values {
		wg.Go(func() {
			data := Data{HostedClusters: []HostedCluster{{Name: fmt.Sprintf("hc-%d", i)}}}
			ev, err := c.Evaluate(t.Context(), Input{Data: data})
			if err == nil && ev.Outcome == Success {
				values[i] = ev.Value
			}
		})
	}
	wg.Wait()
	for i, v := range values {
		g.Expect(v).To(Equal(fmt.Sprintf(`{hosted_cluster="hc-%d"} 1`, i)))
	}
}
