package deploymetrics

import (
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// dir is deploy/monitoring, from this package's folder.
const dir = "../../deploy/monitoring"

func TestRulesAndDashboardParseWithPrometheus(t *testing.T) {
	g := NewWithT(t)
	m, err := Load(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Alerts()).To(ContainElements("ConvoyRolloutStalled", "ConvoyPackageFailedPastDeadline", "ConvoyRolloutCheckInconclusive",
		"ConvoyGitSourceNotFetching", "ConvoyHostedClusterUnreachable", "ConvoyReconcileErrors"))
	for _, g2 := range m.Rules.Groups {
		for _, r := range g2.Rules {
			if r.Alert != "" {
				g.Expect(r.Annotations).To(HaveKey("summary"), "alert %s", r.Alert)
				g.Expect(r.Labels).To(HaveKey("severity"), "alert %s", r.Alert)
			}
		}
	}
	g.Expect(m.Queries).To(HaveKey("Progress per partition"))
	g.Expect(m.Metrics).To(HaveKey("convoy_rollout_packages"))
	g.Expect(m.Metrics).To(HaveKey("convoy_git_polls_total"))
	g.Expect(m.Metrics).To(HaveKey("convoy_render_cache_hits_total"))
	g.Expect(m.Metrics).To(HaveKey("controller_runtime_reconcile_time_seconds_bucket"))
	g.Expect(m.Metrics).To(HaveKey("convoy_resource_condition"))
	g.Expect(m.Queries).To(HaveKey("Gates holding rollouts"))
	g.Expect(m.Metrics).To(HaveKeyWithValue("convoy_rollout_gate", ContainElement("panel Gates holding rollouts")))
	g.Expect(m.Metrics).To(HaveKeyWithValue("convoy_rollout_partitions_awaiting_approval", ContainElement("panel Partitions awaiting approval")))
	g.Expect(m.Metrics).To(HaveKeyWithValue("convoy_rollout_rollbacks_total", ContainElement("panel Rollbacks")))
	g.Expect(m.Metrics).To(HaveKeyWithValue("convoy_rollout_check_evaluations_total", ContainElement("panel Check evaluations by outcome")))
	g.Expect(m.Metrics).To(HaveKeyWithValue("convoy_rollout_checks", ContainElements("panel Checks by state",
		"panel Failed or inconclusive checks", "alert ConvoyRolloutCheckInconclusive")))
}

func TestABrokenQueryIsReportedWithItsPanel(t *testing.T) {
	g := NewWithT(t)
	tmp := t.TempDir()
	rules, err := os.ReadFile(dir + "/" + RulesFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(tmp+"/"+RulesFile, rules, 0o600)).To(Succeed())
	g.Expect(os.WriteFile(tmp+"/"+DashboardFile, []byte(`{"panels":[{"title":"Bad","targets":[{"expr":"sum(rate(x[5m])"}]}]}`), 0o600)).To(Succeed())
	_, err = Load(tmp)
	g.Expect(err).To(MatchError(ContainSubstring(`panel "Bad"`)))

	broken := strings.Replace(string(rules), "== 1", "== ", 1)
	g.Expect(os.WriteFile(tmp+"/"+RulesFile, []byte(broken), 0o600)).To(Succeed())
	_, err = Load(tmp)
	g.Expect(err).To(MatchError(ContainSubstring(RulesFile)))
}

func TestMissingMetricsNamesWhereTheyAreUsed(t *testing.T) {
	g := NewWithT(t)
	m, err := Load(dir)
	g.Expect(err).NotTo(HaveOccurred())
	missing := m.MissingMetrics("# HELP x\nconvoy_rollout_packages{state=\"total\"} 3\n")
	g.Expect(missing).NotTo(ContainElement(HavePrefix("convoy_rollout_packages ")))
	g.Expect(missing).To(ContainElement(ContainSubstring("convoy_git_polls_total (used by panel Git polls by result)")))
}

func TestKustomizationListsEveryFile(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(dir + "/kustomization.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var k struct {
		Resources          []string `json:"resources"`
		ConfigMapGenerator []struct {
			Files []string `json:"files"`
		} `json:"configMapGenerator"`
	}
	g.Expect(yaml.Unmarshal(raw, &k)).To(Succeed())
	g.Expect(k.Resources).To(ConsistOf(RulesFile, "servicemonitor.yaml"))
	g.Expect(k.ConfigMapGenerator).To(HaveLen(1))
	g.Expect(k.ConfigMapGenerator[0].Files).To(ConsistOf(DashboardFile))
}
