package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

func TestPlanGolden(t *testing.T) {
	cases := []struct {
		golden   string
		name     string
		revision string
		output   string
	}{
		{golden: "plan-log-collector.txt", name: "log-collector", output: "text"},
		{golden: "plan-log-collector-revision.txt", name: "log-collector", revision: commitC, output: "text"},
		{golden: "plan-log-collector.yaml", name: "log-collector", output: "yaml"},
		{golden: "plan-metrics-forwarder.txt", name: "metrics-forwarder", output: "text"},
		{golden: "plan-log-collector.md", name: "log-collector", output: "markdown"},
		{golden: "plan-metrics-forwarder.md", name: "metrics-forwarder", output: "markdown"},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			g := NewWithT(t)
			var out bytes.Buffer
			opts := planOptions{revision: tc.revision, output: tc.output, now: func() time.Time { return fixtureNow }}
			g.Expect(runPlan(context.Background(), fixtureFleet(), &out, tc.name, opts)).To(Succeed())
			expectGolden(t, tc.golden, out.Bytes())
		})
	}
}

func TestPlanRefusesAnAbbreviatedRevision(t *testing.T) {
	g := NewWithT(t)
	opts := planOptions{revision: "abc123", output: "text", now: func() time.Time { return fixtureNow }}
	err := runPlan(context.Background(), fixtureFleet(), &bytes.Buffer{}, "log-collector", opts)
	g.Expect(err).To(MatchError(ContainSubstring("full 40-character commit")))
}

// keyOf is the key of a cluster-scoped object.
func keyOf(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

func TestPlanMarkdownTablesHoldEveryStepAndSkippedCluster(t *testing.T) {
	for _, name := range []string{"log-collector", "metrics-forwarder"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var md, js bytes.Buffer
			opts := planOptions{output: "markdown", now: func() time.Time { return fixtureNow }}
			g.Expect(runPlan(context.Background(), fixtureFleet(), &md, name, opts)).To(Succeed())
			opts.output = "json"
			g.Expect(runPlan(context.Background(), fixtureFleet(), &js, name, opts)).To(Succeed())
			var f fleetview.Forecast
			g.Expect(json.Unmarshal(js.Bytes(), &f)).To(Succeed())

			rows := 0
			for _, b := range f.Batches {
				rows += len(b.Steps)
			}
			rows += len(f.Ineligible)
			g.Expect(rows).To(BeNumerically(">", 0))
			shape := parseMarkdown(t, md.Bytes())
			g.Expect(shape.tableRows).To(Equal(rows), "one table row per step and per skipped HostedCluster")
		})
	}
}
