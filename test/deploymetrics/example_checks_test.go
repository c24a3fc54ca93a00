package deploymetrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/checks"
)

// exampleChecks is the example HostedClusterPackage whose checks read what deploy/monitoring
// collects and alerts on.
const exampleChecks = "../../examples/hostedclusterpackage-checks.yaml"

// examplePartition is a partition of two HostedClusters the example's templates render for.
var examplePartition = checks.Data{HostedClusterPackage: "extra-component-checked", Partition: "early", Revision: "extra-component-checked-1",
	Commit: strings.Repeat("a", 40), HostedClusters: []checks.HostedCluster{
		{Name: "early-1", Namespace: "clusters", HCPNamespace: "clusters-early-1"},
		{Name: "early-2", Namespace: "clusters", HCPNamespace: "clusters-early-2"}}}

// recorder is a fake Prometheus or Alertmanager that records the query of each request and
// answers with an empty result.
type recorder struct {
	mu      sync.Mutex
	queries []map[string][]string
	answer  string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.queries = append(r.queries, req.URL.Query())
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(r.answer))
}

// loadExampleChecks reads the checks of the example HostedClusterPackage, strictly.
func loadExampleChecks(g Gomega) []convoyv1alpha1.RolloutCheck {
	raw, err := os.ReadFile(exampleChecks)
	g.Expect(err).NotTo(HaveOccurred())
	var h convoyv1alpha1.HostedClusterPackage
	g.Expect(yaml.UnmarshalStrict(raw, &h)).To(Succeed())
	g.Expect(h.Spec.Checks).NotTo(BeEmpty())
	return h.Spec.Checks
}

// evaluateAgainst compiles c, a query or alerts check, with its address replaced by srv's
// and evaluates it once for examplePartition; it fails on a spec error.
func evaluateAgainst(g Gomega, c convoyv1alpha1.RolloutCheck, srv *httptest.Server) checks.Evaluation {
	c = *c.DeepCopy()
	if c.Prometheus != nil {
		c.Prometheus.Address = srv.URL
	}
	if c.Alerts != nil {
		c.Alerts.Address = srv.URL
	}
	compiled, err := checks.CompileRolloutCheck(&c)
	g.Expect(err).NotTo(HaveOccurred(), "check %s", c.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := compiled.Evaluate(ctx, checks.Input{Data: examplePartition, Since: time.Now().Add(-time.Hour)})
	g.Expect(err).NotTo(HaveOccurred(), "check %s", c.Name)
	return ev
}

func TestExampleQueryCheckReadsTheRulesMetricsForThePartition(t *testing.T) {
	g := NewWithT(t)
	m, err := Load(dir)
	g.Expect(err).NotTo(HaveOccurred())
	prom := &recorder{answer: `{"status":"success","data":{"resultType":"vector","result":[]}}`}
	srv := httptest.NewServer(prom)
	defer srv.Close()
	var seen int
	for _, c := range loadExampleChecks(g) {
		if c.Prometheus == nil {
			continue
		}
		seen++
		ev := evaluateAgainst(g, c, srv)
		g.Expect(ev.Outcome).To(Equal(checks.Success), "an empty answer passes %s: %s", c.Name, ev.Message)
		query := prom.queries[len(prom.queries)-1]["query"][0]
		expr, err := parser.NewParser(parser.Options{}).ParseExpr(query)
		g.Expect(err).NotTo(HaveOccurred(), "the rendered query of %s: %s", c.Name, query)
		parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
			if vs, ok := node.(*parser.VectorSelector); ok {
				g.Expect(m.Metrics).To(HaveKey(vs.Name), "%s reads a metric deploy/monitoring does not use", c.Name)
				g.Expect(vs.String()).To(ContainSubstring(`namespace=~"clusters-early-1|clusters-early-2"`))
			}
			return nil
		})
	}
	g.Expect(seen).To(BeNumerically(">", 0), "the example has a query check")
}

func TestExampleAlertsCheckSelectsTheRulesAlertsForThePartition(t *testing.T) {
	g := NewWithT(t)
	m, err := Load(dir)
	g.Expect(err).NotTo(HaveOccurred())
	am := &recorder{answer: `[]`}
	srv := httptest.NewServer(am)
	defer srv.Close()
	var seen int
	for _, c := range loadExampleChecks(g) {
		if c.Alerts == nil {
			continue
		}
		seen++
		ev := evaluateAgainst(g, c, srv)
		g.Expect(ev.Outcome).To(Equal(checks.Success), "no alert passes %s: %s", c.Name, ev.Message)
		filters := am.queries[len(am.queries)-1]["filter"]
		g.Expect(filters).To(ContainElement(`namespace=~"clusters-early-1|clusters-early-2"`))
		var names []string
		for _, f := range filters {
			if v, ok := strings.CutPrefix(f, `alertname=~"`); ok {
				names = strings.Split(strings.TrimSuffix(v, `"`), "|")
			}
		}
		g.Expect(names).NotTo(BeEmpty(), "%s selects alerts by name", c.Name)
		for _, name := range names {
			g.Expect(slices.Contains(m.Alerts(), name)).To(BeTrue(), "%s selects %s, which deploy/monitoring does not define", c.Name, name)
		}
	}
	g.Expect(seen).To(BeNumerically(">", 0), "the example has an alerts check")
}
