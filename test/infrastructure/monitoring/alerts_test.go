package monitoring_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
)

// errorRatioRule fires AddonErrorRatioHigh for every hosted cluster above 10% errors.
const errorRatioRule = `groups:
- name: addon
  rules:
  - alert: AddonErrorRatioHigh
    expr: convoy_test_addon_error_ratio > 0.1
    labels:
      severity: critical
`

func TestAnErrorRatioRuleFiresAnAlertAlertmanagerHolds(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	deleteErrorRatiosAtCleanup(t)
	east, west := clusters[0], clusters[1]
	g.Expect(servers.SetRules(ctx, map[string]string{"addon": errorRatioRule})).To(Succeed())
	t.Cleanup(func() { g.Expect(servers.SetRules(ctx, nil)).To(Succeed()) })

	setErrorRatio(g, east, "0.5")
	setErrorRatio(g, west, "0.01")

	g.Eventually(activeAlerts).Should(ConsistOf(And(
		HaveKeyWithValue("alertname", "AddonErrorRatioHigh"), HaveKeyWithValue("severity", "critical"),
		HaveKeyWithValue("hosted_cluster", "east"), HaveKeyWithValue("namespace", east.HCPNamespace),
	)), "west is under the threshold")

	setErrorRatio(g, east, "0")
	g.Eventually(activeAlerts).Should(BeEmpty(), "the resolved alert leaves Alertmanager's list")
}

func TestARuleThatDoesNotParseFailsSetRulesWithTheReason(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(servers.SetRules(ctx, map[string]string{"addon": errorRatioRule})).To(Succeed())
	t.Cleanup(func() { g.Expect(servers.SetRules(ctx, nil)).To(Succeed()) })

	err := servers.SetRules(ctx, map[string]string{"addon": errorRatioRule, "broken": `groups:
- name: broken
  rules:
  - alert: Broken
    expr: convoy_test_addon_error_ratio >
`})
	g.Expect(err).To(MatchError(And(ContainSubstring("reloading Prometheus"), ContainSubstring("broken.yml"))))
	_, err = servers.Query(ctx, "vector(1)")
	g.Expect(err).NotTo(HaveOccurred(), "Prometheus still answers")
}

// activeAlerts returns the labels of the active alerts Alertmanager holds, failing on another
// state (nothing silences or inhibits here).
func activeAlerts(g Gomega) []map[string]string {
	alerts, err := servers.Alerts(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	var out []map[string]string
	for _, a := range alerts {
		g.Expect(a.Status.State).To(Equal("active"))
		g.Expect(a.StartsAt).NotTo(BeZero())
		out = append(out, a.Labels)
	}
	return out
}
