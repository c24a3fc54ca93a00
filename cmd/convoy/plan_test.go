package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
