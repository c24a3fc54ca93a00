package probe

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

const deploymentProbes = `
- selector: {kind: {group: apps, kind: Deployment}}
  probes:
  - condition: {type: Available, status: "True"}
  - fieldsEqual: {fieldA: .status.updatedReplicas, fieldB: .status.replicas}
- selector: {kind: {kind: ConfigMap}, selector: {matchLabels: {probed: "yes"}}}
  probes:
  - cel: {rule: "self.data.ready == 'true'", message: "not ready yet"}
`

func compile(t *testing.T, doc string) []Rule {
	t.Helper()
	g := NewWithT(t)
	var probes []convoyv1alpha1.ObjectSetProbe
	g.Expect(yaml.Unmarshal([]byte(doc), &probes)).To(Succeed())
	rules, errs := Compile(probes, field.NewPath("probes"))
	g.Expect(errs).To(BeEmpty())
	return rules
}

func parse(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	g := NewWithT(t)
	j, err := yaml.YAMLToJSON([]byte(doc))
	g.Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	g.Expect(u.UnmarshalJSON(j)).To(Succeed())
	return u
}

func TestEvaluate(t *testing.T) {
	rules := compile(t, deploymentProbes)
	cases := []struct {
		name    string
		obj     string
		ok      bool
		message string
	}{{
		name: "deployment available",
		obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2},
		       status: {observedGeneration: 2, replicas: 3, updatedReplicas: 3, conditions: [{type: Available, status: "True"}]}}`,
		ok: true,
	}, {
		name: "deployment rolling",
		obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2},
		       status: {observedGeneration: 2, replicas: 3, updatedReplicas: 1, conditions: [{type: Available, status: "False", message: "min replicas"}]}}`,
		message: `condition Available is "False", want "True": min replicas; .status.updatedReplicas (1) differs from .status.replicas (3)`,
	}, {
		name: "stale status",
		obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 3},
		       status: {observedGeneration: 2, replicas: 3, updatedReplicas: 3, conditions: [{type: Available, status: "True"}]}}`,
		message: "status outdated (observedGeneration 2, generation 3)",
	}, {
		name: "stale condition",
		obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 3},
		       status: {replicas: 1, updatedReplicas: 1, conditions: [{type: Available, status: "True", observedGeneration: 1}]}}`,
		message: "condition Available outdated (observedGeneration 1, generation 3)",
	}, {
		name:    "no status yet",
		obj:     `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 1}}`,
		message: "condition Available not reported; field .status.updatedReplicas not set",
	}, {
		name:    "cel false",
		obj:     `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, labels: {probed: "yes"}}, data: {ready: "false"}}`,
		message: "not ready yet",
	}, {
		name: "cel true",
		obj:  `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, labels: {probed: "yes"}}, data: {ready: "true"}}`,
		ok:   true,
	}, {
		name: "unprobed: kstatus current",
		obj:  `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {ready: "false"}}`,
		ok:   true,
	}, {
		name:    "unprobed: kstatus in progress",
		obj:     `{apiVersion: example.com/v1, kind: Thing, metadata: {name: t, generation: 1}, status: {conditions: [{type: Ready, status: "False", reason: Waiting, message: "waiting for x"}]}}`,
		message: "InProgress: waiting for x",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ok, msg := Evaluate(rules, parse(t, tc.obj))
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect(msg).To(Equal(tc.message))
		})
	}
}
