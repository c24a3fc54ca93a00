package checks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// vectorAnswer is Prometheus's answer of a vector of error ratios per hosted cluster.
func vectorAnswer(ratios ...float64) string {
	parts := make([]string, 0, len(ratios))
	for i, r := range ratios {
		parts = append(parts, fmt.Sprintf(`{"metric":{"hosted_cluster":"hc-%d","namespace":"clusters-hc-%d"},"value":[1764000000.5,"%g"]}`, i+1, i+1, r))
	}
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(parts, ",") + `]}}`
}

// errorRatioCheck is a query check of the partition's error ratios.
func errorRatioCheck(address string) Spec {
	return &PrometheusCheck{
		Address:          address,
		Query:            `convoy_test_addon_error_ratio{hosted_cluster=~"{{ regex (names .HostedClusters) }}"}`,
		SuccessCondition: "values.all(v, v < 0.1)",
	}
}

func TestPrometheusCheckJudgesTheAnswer(t *testing.T) {
	cases := []struct {
		name       string
		code       int
		body       string
		want       Outcome
		value      string
		messageHas string
	}{
		{"below the threshold", 200, vectorAnswer(0.01, 0.02), Success,
			`{hosted_cluster="hc-1", namespace="clusters-hc-1"} 0.01, {hosted_cluster="hc-2", namespace="clusters-hc-2"} 0.02`, "is true"},
		{"above the threshold", 200, vectorAnswer(0.01, 0.5), Failure,
			`{hosted_cluster="hc-1", namespace="clusters-hc-1"} 0.01, {hosted_cluster="hc-2", namespace="clusters-hc-2"} 0.5`, `is false for`},
		{"empty vector, the condition decides", 200, vectorAnswer(), Success, "no series", "is true"},
		{"scalar", 200, `{"status":"success","data":{"resultType":"scalar","result":[1764000000,"0.5"]}}`, Failure, "0.5", "is false"},
		{"NaN cannot be compared", 200, `{"status":"success","data":{"resultType":"scalar","result":[1764000000,"NaN"]}}`,
			Inconclusive, "NaN", "NaN values cannot be ordered"},
		{"Prometheus's error", 400, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:5: parse error"}`,
			Inconclusive, "", `prometheus refused the query (bad_data): invalid parameter "query": 1:5: parse error`},
		{"a query timeout", 503, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`,
			Inconclusive, "", "(timeout): query timed out"},
		{"a matrix", 200, `{"status":"success","data":{"resultType":"matrix","result":[]}}`, Inconclusive, "", "returned a matrix"},
		{"not Prometheus", 502, `<html>bad gateway</html>`, Inconclusive, "", "answered HTTP 502, not Prometheus's API: <html>bad gateway</html>"},
		{"a histogram", 200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1,{}]}]}}`,
			Inconclusive, "", "native histogram"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			prom := startServer(t, answerWith(tc.code, tc.body))
			ev, err := evaluate(t, errorRatioCheck(prom.URL), Input{Data: partitionData()})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ev.Outcome).To(Equal(tc.want), ev.Message)
			g.Expect(ev.Value).To(Equal(tc.value))
			g.Expect(ev.Message).To(ContainSubstring(tc.messageHas))
		})
	}
}

func TestPrometheusCheckSendsAnInstantQuery(t *testing.T) {
	g := NewWithT(t)
	prom := startServer(t, answerWith(200, vectorAnswer(0)))
	spec := errorRatioCheck(prom.URL + "/prometheus/")
	_, err := evaluate(t, spec, Input{Data: partitionData(), Credentials: &Credentials{Token: "tok"}, AllowInsecureHTTP: true})
	g.Expect(err).NotTo(HaveOccurred())
	req := prom.last()
	g.Expect(req.Method).To(Equal(http.MethodGet))
	g.Expect(req.Path).To(Equal("/prometheus/api/v1/query"))
	g.Expect(req.Query.Get("query")).To(Equal(`convoy_test_addon_error_ratio{hosted_cluster=~"(?:hc-1|hc-2)"}`))
	timeout, err := strconv.ParseFloat(req.Query.Get("timeout"), 64)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(timeout).To(BeNumerically("~", 9, 0.1), "nine tenths of the request's 10s, in seconds")
	g.Expect(req.Authorization).To(Equal("Bearer tok"))
}

func TestPrometheusCheckAnswersAreBounded(t *testing.T) {
	t.Run("too many series", func(t *testing.T) {
		g := NewWithT(t)
		ratios := make([]float64, MaxSeries+1)
		prom := startServer(t, answerWith(200, vectorAnswer(ratios...)))
		ev, err := evaluate(t, errorRatioCheck(prom.URL), Input{Data: partitionData()})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Outcome).To(Equal(Inconclusive))
		g.Expect(ev.Message).To(ContainSubstring("returned 1001 series, more than 1000: aggregate it"))
	})
	t.Run("a body over the bound", func(t *testing.T) {
		g := NewWithT(t)
		prom := startServer(t, func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[` + strings.Repeat(" ", MaxPrometheusBody)))
		})
		ev, err := evaluate(t, errorRatioCheck(prom.URL), Input{Data: partitionData()})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Outcome).To(Equal(Inconclusive))
		g.Expect(ev.Message).To(ContainSubstring("the answer exceeds 4194304 bytes"))
	})
	t.Run("many series within the bound: the value is cut", func(t *testing.T) {
		g := NewWithT(t)
		ratios := make([]float64, 100)
		ratios[99] = 1
		prom := startServer(t, answerWith(200, vectorAnswer(ratios...)))
		ev, err := evaluate(t, errorRatioCheck(prom.URL), Input{Data: partitionData()})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Outcome).To(Equal(Failure))
		g.Expect(len(ev.Value)).To(BeNumerically("<=", MaxValueBytes))
		g.Expect(len(ev.Message)).To(BeNumerically("<=", MaxMessageBytes))
	})
}

func TestPrometheusCheckUnreachableIsInconclusive(t *testing.T) {
	t.Run("nothing listens", func(t *testing.T) {
		g := NewWithT(t)
		ev, err := evaluate(t, errorRatioCheck(closedAddress()), Input{Data: partitionData()})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Outcome).To(Equal(Inconclusive))
		g.Expect(ev.Message).To(ContainSubstring("connection refused"))
	})
	t.Run("never answers, within a shorter deadline of the caller", func(t *testing.T) {
		g := NewWithT(t)
		stop := make(chan struct{})
		prom := startServer(t, neverAnswer(stop))
		t.Cleanup(func() { close(stop) })
		c, err := Compile(errorRatioCheck(prom.URL))
		g.Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		ev, err := c.Evaluate(ctx, Input{Data: partitionData()})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		g.Expect(ev.Outcome).To(Equal(Inconclusive))
		g.Expect(ev.Message).To(ContainSubstring("no answer before the timeout"))
		timeout, err := strconv.ParseFloat(prom.last().Query.Get("timeout"), 64)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(timeout).To(BeNumerically("<=", 0.27), "Prometheus is told the caller's deadline")
	})
}

func TestPrometheusCheckSpecErrors(t *testing.T) {
	cases := []struct {
		name  string
		spec  PrometheusCheck
		field string
	}{
		{"no address", PrometheusCheck{Query: "up", SuccessCondition: "true"}, "prometheus.address"},
		{"credentials in the address", PrometheusCheck{Address: "http://u:p@prom:9090", Query: "up", SuccessCondition: "true"}, "prometheus.address"},
		{"a templated address", PrometheusCheck{Address: "http://prom-{{.Partition}}:9090", Query: "up", SuccessCondition: "true"}, "prometheus.address"},
		{"an empty query", PrometheusCheck{Address: "http://prom:9090", SuccessCondition: "true"}, "prometheus.query"},
		{"a bad template", PrometheusCheck{Address: "http://prom:9090", Query: "{{ .Partition", SuccessCondition: "true"}, "prometheus.query"},
		{"a bad condition", PrometheusCheck{Address: "http://prom:9090", Query: "up", SuccessCondition: "values >"}, "prometheus.successCondition"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := tc.spec
			_, err := Compile(&spec)
			var specErr *SpecError
			g.Expect(errors.As(err, &specErr)).To(BeTrue(), "%v", err)
			g.Expect(specErr.Field).To(Equal(tc.field))
			g.Expect(err.Error()).NotTo(ContainSubstring("u:p"))
		})
	}
}

func TestPrometheusCheckTemplateErrorIsASpecError(t *testing.T) {
	g := NewWithT(t)
	prom := startServer(t, answerWith(200, vectorAnswer(0)))
	spec := errorRatioCheck(prom.URL).(*PrometheusCheck)
	spec.Query = `up{x="{{ range .HostedClusters }}{{ .Labels.missing }}{{ end }}"}`
	_, err := evaluate(t, spec, Input{Data: partitionData()})
	var specErr *SpecError
	g.Expect(errors.As(err, &specErr)).To(BeTrue(), "%v", err)
	g.Expect(specErr.Field).To(Equal("prometheus.query"))
	g.Expect(prom.last().Method).To(BeEmpty(), "no request before the template renders")
}

func TestFormatSeriesNamesWhatTellsTheSeriesApart(t *testing.T) {
	g := NewWithT(t)
	scraped := func(cluster string, v float64) series {
		return series{Metric: map[string]string{"__name__": "convoy_test_addon_error_ratio", "job": "addons",
			"instance": "10.0.0.1:8080", "hosted_cluster": cluster}, Value: v}
	}
	g.Expect(formatSeries([]series{scraped("hc-1", 0.01), scraped("hc-2", 0.5)})).To(Equal(`{hosted_cluster="hc-1"} 0.01, {hosted_cluster="hc-2"} 0.5`))
	g.Expect(formatSeries([]series{scraped("hc-1", 0.01)})).To(Equal(`{hosted_cluster="hc-1", instance="10.0.0.1:8080", job="addons"} 0.01`))
	g.Expect(formatSeries([]series{{Value: 2}})).To(Equal("2"))
	g.Expect(quote("a\nb")).To(Equal(`"a\nb"`))
}
