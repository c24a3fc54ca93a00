package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

var env *fleet.Fleet

func TestMain(m *testing.M) {
	fleet.Main(m, &env, fleet.Options{WithoutHyperShift: true}, nil)
}

// admissionCase is a valid object with one edit applied; wantErr is empty for a valid object,
// else every string must appear in the API server's refusal (the field path and the rule).
type admissionCase struct {
	name    string
	edit    string // YAML merged into the valid object's spec
	wantErr []string
}

func TestGitSourceAdmission(t *testing.T) {
	valid := `
apiVersion: convoy.dev/v1alpha1
kind: GitSource
spec:
  url: https://git.example.com/fleet/addons.git
  ref: {branch: main}
  interval: 1m30s
`
	runAdmission(t, valid, []admissionCase{
		{name: "valid branch"},
		{name: "valid scp-like url and semver", edit: `{url: "git@github.com:fleet/addons.git", ref: {semver: ">=1.0.0 <2.0.0"}}`},
		{name: "valid commit", edit: `{ref: {commit: "0123456789abcdef0123456789abcdef01234567"}}`},
		{name: "no ref", edit: `{ref: {}}`, wantErr: []string{"spec.ref", "exactly one of branch, tag, semver or commit"}},
		{name: "two refs", edit: `{ref: {branch: main, tag: v1}}`, wantErr: []string{"spec.ref", "exactly one of branch, tag, semver or commit"}},
		{name: "short commit", edit: `{ref: {commit: "abc123"}}`, wantErr: []string{"spec.ref.commit"}},
		{name: "bad interval", edit: `{interval: "5 minutes"}`, wantErr: []string{"spec.interval"}},
		{name: "bad timeout", edit: `{timeout: "1d"}`, wantErr: []string{"spec.timeout"}},
		{name: "bad scheme", edit: `{url: "ftp://example.com/repo"}`, wantErr: []string{"spec.url"}},
		{name: "shortest interval", edit: `{interval: 1s, timeout: 1s}`},
		{name: "longest timeout", edit: `{timeout: 1h}`},
		{name: "interval of 1ms", edit: `{interval: 1ms}`, wantErr: []string{"spec.interval", "interval must be at least 1s"}},
		{name: "interval under a second", edit: `{interval: 999ms}`, wantErr: []string{"spec.interval", "interval must be at least 1s"}},
		{name: "timeout of 0s", edit: `{timeout: 0s}`, wantErr: []string{"spec.timeout", "timeout must be between 1s and 1h"}},
		{name: "timeout over an hour", edit: `{timeout: 1h1s}`, wantErr: []string{"spec.timeout", "timeout must be between 1s and 1h"}},
		{name: "valid accessFrom", edit: `{accessFrom: {namespaceSelectors: [{matchLabels: {tenant: a}}, {}]}}`},
		{name: "accessFrom without selectors", edit: `{accessFrom: {namespaceSelectors: []}}`, wantErr: []string{"spec.accessFrom.namespaceSelectors"}},
	})
}

func TestPackageAdmission(t *testing.T) {
	valid := `
apiVersion: convoy.dev/v1alpha1
kind: Package
spec:
  sourceRef: {name: addons}
  path: packages/extra-component
  config: {replicas: 2, nested: {a: b}}
`
	runAdmission(t, valid, []admissionCase{
		{name: "valid"},
		{name: "valid pinned revision", edit: `{revision: "0123456789abcdef0123456789abcdef01234567"}`},
		{name: "path escapes", edit: `{path: "packages/../../etc"}`, wantErr: []string{"spec.path", "must not contain '..'"}},
		{name: "absolute path", edit: `{path: "/etc"}`, wantErr: []string{"spec.path", "must be relative"}},
		{name: "short revision", edit: `{revision: "abc"}`, wantErr: []string{"spec.revision"}},
		{name: "bad interval", edit: `{interval: "often"}`, wantErr: []string{"spec.interval"}},
		{name: "shortest interval", edit: `{interval: 1s}`},
		{name: "interval of 1ms", edit: `{interval: 1ms}`, wantErr: []string{"spec.interval", "interval must be at least 1s"}},
		{name: "valid serviceAccountName", edit: `{serviceAccountName: addon-deployer}`},
		{name: "bad serviceAccountName", edit: `{serviceAccountName: "system:admin"}`, wantErr: []string{"spec.serviceAccountName"}},
		{name: "no source name", edit: `{sourceRef: {name: ""}}`, wantErr: []string{"spec.sourceRef.name"}},
	})
}

func TestObjectDeploymentAdmission(t *testing.T) {
	valid := `
apiVersion: convoy.dev/v1alpha1
kind: ObjectDeployment
spec:
  template:
    spec:
      phases:
      - name: rbac
        class: hosted-cluster
        objects:
        - object: {apiVersion: v1, kind: ServiceAccount, metadata: {name: agent, namespace: kube-system}}
      - name: deploy
        objects:
        - object: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {a: b}}
      availabilityProbes:
      - selector: {kind: {group: apps, kind: Deployment}}
        probes:
        - condition: {type: Available, status: "True"}
        - fieldsEqual: {fieldA: .status.updatedReplicas, fieldB: .status.replicas}
        - cel: {rule: "self.status.ready", message: not ready}
`
	phase := func(name, class string) string {
		return fmt.Sprintf(`{name: %s, class: %q, objects: [{object: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}}]}`, name, class)
	}
	runAdmission(t, valid, []admissionCase{
		{name: "valid"},
		{name: "duplicate phase names", edit: `{template: {spec: {phases: [` + phase("a", "") + `, ` + phase("a", "") + `]}}}`,
			wantErr: []string{"spec.template.spec.phases[1]", "Duplicate value"}},
		{name: "unknown class", edit: `{template: {spec: {phases: [` + phase("a", "elsewhere") + `]}}}`,
			wantErr: []string{"spec.template.spec.phases[0].class", "Unsupported value"}},
		{name: "object without kind", edit: `{template: {spec: {phases: [{name: a, objects: [{object: {apiVersion: v1, metadata: {name: x}}}]}]}}}`,
			wantErr: []string{"spec.template.spec.phases[0].objects[0].object.kind"}},
		{name: "probe with two checks", edit: `{template: {spec: {phases: [` + phase("a", "") + `], availabilityProbes: [{selector: {kind: {kind: Pod}}, probes: [{condition: {type: Ready, status: "True"}, cel: {rule: "true", message: m}}]}]}}}`,
			wantErr: []string{"spec.template.spec.availabilityProbes[0].probes[0]", "exactly one of condition, fieldsEqual or cel"}},
	})
}

func TestHostedClusterPackageAdmission(t *testing.T) {
	valid := `
apiVersion: convoy.dev/v1alpha1
kind: HostedClusterPackage
spec:
  hostedClusterSelector: {matchLabels: {foo: bar}}
  partition:
    labelKey: hypershift.openshift.io/risk-group
    order: {static: [early, normal, late]}
  strategy:
    rollingUpgrade: {maxUnavailable: 1, progressDeadlineSeconds: 600}
  template:
    metadata: {labels: {foo: bar}}
    spec: {sourceRef: {name: addons, namespace: fleet}, path: packages/extra-component}
`
	strategy := func(mu string) string { return `{strategy: {rollingUpgrade: {maxUnavailable: ` + mu + `}}}` }
	const maxUnavailableRule = "maxUnavailable must be an integer of at least 1 or a percentage from 1% to 100%"
	runAdmission(t, valid, []admissionCase{
		{name: "valid"},
		{name: "valid percentage", edit: strategy(`"10%"`)},
		{name: "valid 100%", edit: strategy(`"100%"`)},
		{name: "valid instant and alphanumeric", edit: `{strategy: {instant: {}}, partition: {labelKey: k, order: {alphanumericAsc: {}}}}`},
		{name: "maxUnavailable zero", edit: strategy(`0`), wantErr: []string{"spec.strategy.rollingUpgrade.maxUnavailable", maxUnavailableRule}},
		{name: "maxUnavailable negative", edit: strategy(`-1`), wantErr: []string{"spec.strategy.rollingUpgrade.maxUnavailable", maxUnavailableRule}},
		{name: "maxUnavailable 0%", edit: strategy(`"0%"`), wantErr: []string{"spec.strategy.rollingUpgrade.maxUnavailable", maxUnavailableRule}},
		{name: "maxUnavailable 101%", edit: strategy(`"101%"`), wantErr: []string{"spec.strategy.rollingUpgrade.maxUnavailable", maxUnavailableRule}},
		{name: "maxUnavailable word", edit: strategy(`"one"`), wantErr: []string{"spec.strategy.rollingUpgrade.maxUnavailable", maxUnavailableRule}},
		{name: "both strategies", edit: `{strategy: {instant: {}, rollingUpgrade: {maxUnavailable: 1}}}`,
			wantErr: []string{"spec.strategy", "exactly one of instant or rollingUpgrade"}},
		{name: "no strategy", edit: `{strategy: {}}`, wantErr: []string{"spec.strategy", "exactly one of instant or rollingUpgrade"}},
		{name: "zero deadline", edit: `{strategy: {rollingUpgrade: {progressDeadlineSeconds: 0}}}`,
			wantErr: []string{"spec.strategy.rollingUpgrade.progressDeadlineSeconds"}},
		{name: "negative minReadySeconds", edit: `{strategy: {rollingUpgrade: {minReadySeconds: -1}}}`,
			wantErr: []string{"spec.strategy.rollingUpgrade.minReadySeconds"}},
		{name: "template interval of 10ms", edit: `{template: {spec: {sourceRef: {name: a}, path: p, interval: 10ms}}}`,
			wantErr: []string{"spec.template.spec.interval", "interval must be at least 1s"}},
		{name: "duplicate static values", edit: `{partition: {labelKey: k, order: {static: [early, early]}}}`,
			wantErr: []string{"spec.partition.order.static[1]", "Duplicate value"}},
		{name: "unknown listed in a static order", edit: `{partition: {labelKey: k, order: {static: [early, unknown]}}}`,
			wantErr: []string{"spec.partition.order.static", "unknown is the implicit last partition"}},
		{name: "star in a static order", edit: `{partition: {labelKey: k, order: {static: [early, "*", late]}}}`},
		{name: "both orders", edit: `{partition: {labelKey: k, order: {static: [a], alphanumericAsc: {}}}}`,
			wantErr: []string{"spec.partition.order", "exactly one of static or alphanumericAsc"}},
		{name: "empty label key", edit: `{partition: {labelKey: ""}}`, wantErr: []string{"spec.partition.labelKey"}},
		{name: "template path escapes", edit: `{template: {spec: {sourceRef: {name: a}, path: "../x"}}}`,
			wantErr: []string{"spec.template.spec.path", "must not contain '..'"}},
	})
}

func TestHostedClusterPackageCheckAdmission(t *testing.T) {
	valid := `
apiVersion: convoy.dev/v1alpha1
kind: HostedClusterPackage
spec:
  partition: {labelKey: risk-group}
  template:
    spec: {sourceRef: {name: addons, namespace: fleet}, path: packages/extra-component}
`
	const prom = `prometheus: {address: "http://prometheus:9090", query: "up", successCondition: "values.all(v, v == 1.0)"}`
	checks := func(items ...string) string { return `{checks: [` + strings.Join(items, ", ") + `]}` }
	const oneOf = "exactly one of prometheus, alerts or http must be set"
	runAdmission(t, valid, []admissionCase{
		{name: "valid prometheus", edit: checks(`{name: errors, durationSeconds: 300, failureLimit: 1, ` + prom + `}`)},
		{name: "valid alerts", edit: checks(`{name: alerts, alerts: {address: "https://am:9093", matchers: ['severity="critical"'],
			secretRef: {namespace: monitoring, name: am-token}}}`)},
		{name: "valid http", edit: checks(`{name: web, http: {url: "https://checks.example.com/x", timeoutSeconds: 60}}`)},
		{name: "valid partition checks and skipChecks", edit: `{partition: {labelKey: k, policies: [
			{name: early, checks: [{name: web, http: {url: "https://x"}}]}, {name: late, skipChecks: true}]}}`},
		{name: "no kind", edit: checks(`{name: none}`), wantErr: []string{"spec.checks[0]", oneOf}},
		{name: "two kinds", edit: checks(`{name: two, http: {url: "https://x"}, ` + prom + `}`), wantErr: []string{"spec.checks[0]", oneOf}},
		{name: "duplicate names", edit: checks(`{name: a, http: {url: "https://x"}}`, `{name: a, http: {url: "https://y"}}`),
			wantErr: []string{"spec.checks[1]", "Duplicate value"}},
		{name: "name not a DNS label", edit: checks(`{name: Bad_Name, http: {url: "https://x"}}`), wantErr: []string{"spec.checks[0].name"}},
		{name: "interval of zero", edit: checks(`{name: a, intervalSeconds: 0, http: {url: "https://x"}}`),
			wantErr: []string{"spec.checks[0].intervalSeconds"}},
		{name: "negative failureLimit", edit: checks(`{name: a, failureLimit: -1, http: {url: "https://x"}}`),
			wantErr: []string{"spec.checks[0].failureLimit"}},
		{name: "timeout over a minute", edit: checks(`{name: a, http: {url: "https://x", timeoutSeconds: 61}}`),
			wantErr: []string{"spec.checks[0].http.timeoutSeconds"}},
		{name: "url not http", edit: checks(`{name: a, http: {url: "file:///etc/passwd"}}`), wantErr: []string{"spec.checks[0].http.url"}},
		{name: "alerts without matchers", edit: checks(`{name: a, alerts: {address: "http://am", matchers: []}}`),
			wantErr: []string{"spec.checks[0].alerts.matchers"}},
		{name: "prometheus without condition", edit: checks(`{name: a, prometheus: {address: "http://p", query: up}}`),
			wantErr: []string{"spec.checks[0].prometheus.successCondition"}},
		{name: "secretRef without namespace", edit: checks(`{name: a, http: {url: "https://x", secretRef: {name: s}}}`),
			wantErr: []string{"spec.checks[0].http.secretRef.namespace"}},
		{name: "checks and skipChecks", edit: `{partition: {labelKey: k, policies: [
			{name: early, skipChecks: true, checks: [{name: web, http: {url: "https://x"}}]}]}}`,
			wantErr: []string{"spec.partition.policies[0]", "checks and skipChecks are mutually exclusive"}},
	})
}

// TestCheckDefaults: a check written without its optional fields gets the documented defaults.
func TestCheckDefaults(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	hcpkg := &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: "check-defaults"},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			Checks: []convoyv1alpha1.RolloutCheck{{Name: "web", HTTP: &convoyv1alpha1.HTTPCheck{URL: "https://x"}}},
			Template: convoyv1alpha1.PackageTemplate{Spec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Name: "addons", Namespace: "fleet"}, Path: "packages/a"}},
		},
	}
	g.Expect(env.Client.Create(ctx, hcpkg)).To(Succeed())
	check := hcpkg.Spec.Checks[0]
	g.Expect(check.IntervalSeconds).To(BeEquivalentTo(30))
	g.Expect(check.DurationSeconds).To(BeZero())
	g.Expect(check.HTTP.TimeoutSeconds).To(BeEquivalentTo(10))
}

// runAdmission creates the valid object with each case's edit and checks the API server's answer.
func runAdmission(t *testing.T, valid string, cases []admissionCase) {
	ns := env.NewNamespace(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := objectWithEdit(g, valid, tc.edit)
			obj.SetName(fmt.Sprintf("case-%d", i))
			if obj.GetKind() != "HostedClusterPackage" {
				obj.SetNamespace(ns)
			} else {
				obj.SetName(fmt.Sprintf("%s-case-%d", ns, i))
			}
			err := env.Client.Create(context.Background(), obj)
			if len(tc.wantErr) == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred())
			for _, want := range tc.wantErr {
				g.Expect(err.Error()).To(ContainSubstring(want))
			}
		})
	}
}

func objectWithEdit(g Gomega, valid, edit string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal([]byte(valid), &obj.Object)).To(Succeed())
	if strings.TrimSpace(edit) == "" {
		return obj
	}
	patch := map[string]any{}
	g.Expect(yaml.Unmarshal([]byte(edit), &patch)).To(Succeed())
	spec := obj.Object["spec"].(map[string]any)
	for k, v := range patch {
		spec[k] = v
	}
	return obj
}

// TestTypedClientGetsStrategyAndOrderDefaults guards the omitzero tags: a Go client that leaves
// strategy and partition order unset must get their defaults, not an empty object that the
// exactly-one rules refuse.
func TestTypedClientGetsStrategyAndOrderDefaults(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	hcpkg := &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: "typed-defaults"},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			Partition: &convoyv1alpha1.PartitionSpec{LabelKey: "hypershift.openshift.io/risk-group"},
			Template: convoyv1alpha1.PackageTemplate{Spec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Name: "addons", Namespace: "fleet"}, Path: "packages/a"}},
		},
	}
	g.Expect(env.Client.Create(ctx, hcpkg)).To(Succeed())
	g.Expect(hcpkg.Spec.Strategy.RollingUpgrade).NotTo(BeNil())
	g.Expect(hcpkg.Spec.Strategy.RollingUpgrade.MaxUnavailable.IntValue()).To(Equal(1))
	g.Expect(*hcpkg.Spec.Strategy.RollingUpgrade.ProgressDeadlineSeconds).To(BeEquivalentTo(600))
	g.Expect(hcpkg.Spec.Partition.Order.AlphanumericAsc).NotTo(BeNil())
}
