package checks

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// apiKinds returns the JSON names of RolloutCheck's kind fields: its pointer fields, in order.
func apiKinds() []string {
	var names []string
	t := reflect.TypeFor[convoyv1alpha1.RolloutCheck]()
	for i := range t.NumField() {
		if t.Field(i).Type.Kind() == reflect.Pointer {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			names = append(names, name)
		}
	}
	return names
}

func TestEveryKindOfTheAPIIsRegisteredOnce(t *testing.T) {
	g := NewWithT(t)
	g.Expect(apiKinds()).To(Equal([]string{"prometheus", "alerts", "http"}))
	g.Expect(Kinds()).To(Equal(apiKinds()), "a kind field of RolloutCheck without its file in rollout/checks, or the reverse")
	g.Expect(func() {
		Register(Kind[convoyv1alpha1.HTTPCheck]{Name: "http", Field: kindField, Spec: kindSpec, Subject: kindSubject})
	}).
		To(PanicWith(ContainSubstring(`kind "http" is registered twice`)))
	g.Expect(func() { Register(Kind[convoyv1alpha1.HTTPCheck]{Name: "incomplete", Field: kindField}) }).
		To(PanicWith(ContainSubstring(`kind "incomplete" lacks its Name, Field, Spec or Subject`)))
	g.Expect(Kinds()).To(Equal(apiKinds()))
}

func kindField(c *convoyv1alpha1.RolloutCheck) *convoyv1alpha1.HTTPCheck { return c.HTTP }
func kindSpec(h *convoyv1alpha1.HTTPCheck) Spec                          { return &HTTPCheck{URL: h.URL} }
func kindSubject(*convoyv1alpha1.HTTPCheck) string                       { return "" }

// tableCases are one check of each kind, with a Secret, and what the table says of it.
var tableCases = []struct {
	check         convoyv1alpha1.RolloutCheck
	kind, subject string
	describe      string
	secret        string
	timeout       time.Duration
}{
	{check: convoyv1alpha1.RolloutCheck{Name: "q", Prometheus: &convoyv1alpha1.PrometheusCheck{Address: "http://prom:9090",
		Query: "up\t== 1", SuccessCondition: `values.all(v, v == 1.0)`, SecretRef: &convoyv1alpha1.SecretReference{Namespace: "m", Name: "prom"}}},
		kind: "prometheus", subject: "query \"up\\t== 1\" with condition `values.all(v, v == 1.0)`",
		describe: "query `up\t== 1` at http://prom:9090", secret: "prom", timeout: 10 * time.Second},
	{check: convoyv1alpha1.RolloutCheck{Name: "a", Alerts: &convoyv1alpha1.AlertsCheck{Address: "http://am:9093",
		Matchers: []string{`severity="critical"`, `team="x"`}, SecretRef: &convoyv1alpha1.SecretReference{Namespace: "m", Name: "am"}}},
		kind: "alerts", subject: `alerts matching {severity="critical", team="x"}`,
		describe: `alerts matching [severity="critical" team="x"] at http://am:9093`, secret: "am", timeout: 10 * time.Second},
	{check: convoyv1alpha1.RolloutCheck{Name: "h", HTTP: &convoyv1alpha1.HTTPCheck{URL: "https://hook.example/gate",
		SecretRef: &convoyv1alpha1.SecretReference{Namespace: "m", Name: "hook"}}},
		kind: "http", subject: "POST https://hook.example/gate", describe: "POST https://hook.example/gate", secret: "hook", timeout: 10 * time.Second},
	{check: convoyv1alpha1.RolloutCheck{Name: "h", HTTP: &convoyv1alpha1.HTTPCheck{URL: "https://hook.example/gate", TimeoutSeconds: 42}},
		kind: "http", subject: "POST https://hook.example/gate", describe: "POST https://hook.example/gate", timeout: 42 * time.Second},
}

func TestTheTableConvertsEachKind(t *testing.T) {
	for _, tc := range tableCases {
		t.Run(tc.kind+" "+tc.subject, func(t *testing.T) {
			g := NewWithT(t)
			c := tc.check
			g.Expect(KindOf(&c)).To(Equal(tc.kind))
			g.Expect(Subject(&c)).To(Equal(tc.subject))
			compiled, err := CompileRolloutCheck(&c)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(compiled.Describe()).To(Equal(tc.describe))
			g.Expect(compiled.Timeout()).To(Equal(tc.timeout))
			if tc.secret == "" {
				g.Expect(SecretRef(&c)).To(BeNil())
			} else {
				g.Expect(SecretRef(&c)).To(Equal(&convoyv1alpha1.SecretReference{Namespace: "m", Name: tc.secret}))
			}
		})
	}
}

func TestAKeySaysWhatACheckEvaluates(t *testing.T) {
	g := NewWithT(t)
	a := tableCases[0].check
	b := *a.DeepCopy()
	b.Name, b.FailureLimit, b.DurationSeconds = "other", 3, 600
	g.Expect(Key(&b)).To(Equal(Key(&a)), "the name and the limits are not what it evaluates")
	b.Prometheus.SecretRef.Name = "other"
	g.Expect(Key(&b)).NotTo(Equal(Key(&a)), "another Secret is another check")
	h := tableCases[2].check
	g.Expect(Key(&h)).NotTo(Equal(Key(&a)))
	g.Expect(Key(&h)).To(HavePrefix(`http:{"url":"https://hook.example/gate"`))
}

func TestARolloutCheckSetsExactlyOneKind(t *testing.T) {
	g := NewWithT(t)
	two := convoyv1alpha1.RolloutCheck{Name: "two", HTTP: &convoyv1alpha1.HTTPCheck{URL: "https://a/"},
		Alerts: &convoyv1alpha1.AlertsCheck{}}
	_, err := CompileRolloutCheck(&two)
	g.Expect(err).To(MatchError("check must set exactly one of prometheus, alerts and http: sets 2"))
	g.Expect(errors.As(err, new(*SpecError))).To(BeTrue())
	none := convoyv1alpha1.RolloutCheck{Name: "none"}
	_, err = CompileRolloutCheck(&none)
	g.Expect(err).To(MatchError(ContainSubstring("sets 0")))
	g.Expect(KindOf(&none)).To(BeEmpty())
	g.Expect(Subject(&none)).To(Equal("check"))
	g.Expect(SecretRef(&none)).To(BeNil())
	_, err = Compile(nil)
	g.Expect(err).To(MatchError(ContainSubstring("must set exactly one of prometheus, alerts and http")))
}

func TestTheTableKeepsAnInvalidFieldASpecError(t *testing.T) {
	g := NewWithT(t)
	c := convoyv1alpha1.RolloutCheck{Name: "h", HTTP: &convoyv1alpha1.HTTPCheck{URL: "https://hook.example/", TimeoutSeconds: 61}}
	_, err := CompileRolloutCheck(&c)
	g.Expect(err).To(MatchError(ContainSubstring("http.timeoutSeconds must be at most 1m0s")))
}
