package checks

import (
	"net/http"
	"testing"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// TestCredentialsGoOverHTTPSOnly evaluates a check of each kind with a token at an http://
// server: nothing is sent and the evaluation names the rule and the flag; with
// AllowInsecureHTTP the request goes, with the token.
func TestCredentialsGoOverHTTPSOnly(t *testing.T) {
	specs := map[string]func(address string) Spec{
		"prometheus": errorRatioCheck,
		"alerts":     partitionAlertsCheck,
		"http":       func(a string) Spec { return &HTTPCheck{URL: a} },
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := startServer(t, answerWith(http.StatusOK, vectorAnswer(0)))
			in := Input{Data: partitionData(), Since: partitionStart, Credentials: &Credentials{Token: secretToken}}
			ev, err := evaluate(t, spec(s.URL), in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ev.Outcome).To(Equal(Inconclusive))
			g.Expect(ev.Message).To(ContainSubstring("refused: the check's secretRef credentials would go in clear over http://"))
			g.Expect(ev.Message).To(ContainSubstring("--check-allow-insecure-http"))
			g.Expect(s.count()).To(BeZero(), "a request was sent")

			in.AllowInsecureHTTP = true
			_, err = evaluate(t, spec(s.URL), in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.count()).To(Equal(1))
			g.Expect(s.last().Authorization).To(Equal("Bearer " + secretToken))
		})
	}
}

// TestChecksRefuseMetadataAddresses evaluates a check of each kind at the metadata address:
// inconclusive, naming the rule, without a connection (the address is judged before the
// dial; its unit tests prove the dialer is never called).
func TestChecksRefuseMetadataAddresses(t *testing.T) {
	specs := map[string]Spec{
		"prometheus": errorRatioCheck("http://169.254.169.254/"),
		"alerts":     partitionAlertsCheck("http://[fd00:ec2::254]/"),
		"http":       &HTTPCheck{URL: "http://169.254.169.254/latest/meta-data/"},
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ev, err := evaluate(t, spec, Input{Data: partitionData(), Since: partitionStart})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ev.Outcome).To(Equal(Inconclusive))
			g.Expect(ev.Message).To(ContainSubstring("refused unless the controller runs with --allow-link-local-addresses"))
		})
	}
}

// TestInsecureCredentialsIsRefusedBeforeAnyIO asks InsecureCredentials of each kind: an http://
// address with a secretRef is a *SpecError naming the field, the rule and the flag; https://,
// no secretRef, or the flag pass.
func TestInsecureCredentialsIsRefusedBeforeAnyIO(t *testing.T) {
	ref := &convoyv1alpha1.SecretReference{Namespace: "ns", Name: "creds"}
	cases := []struct {
		name  string
		check convoyv1alpha1.RolloutCheck
		field string
	}{
		{"prometheus", convoyv1alpha1.RolloutCheck{Prometheus: &convoyv1alpha1.PrometheusCheck{Address: "http://prom:9090", SecretRef: ref}}, "prometheus.address"},
		{"alerts", convoyv1alpha1.RolloutCheck{Alerts: &convoyv1alpha1.AlertsCheck{Address: "http://am:9093", SecretRef: ref}}, "alerts.address"},
		{"http", convoyv1alpha1.RolloutCheck{HTTP: &convoyv1alpha1.HTTPCheck{URL: "http://hook/judge", SecretRef: ref}}, "http.url"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := InsecureCredentials(&tc.check, false)
			var spec *SpecError
			g.Expect(err).To(BeAssignableToTypeOf(spec))
			g.Expect(err.Error()).To(HavePrefix(tc.field + " must be an https:// URL when secretRef names credentials (http:// only with the controller flag --check-allow-insecure-http): is http://"))
			g.Expect(InsecureCredentials(&tc.check, true)).To(Succeed())
			setSecretRef(&tc.check, nil)
			g.Expect(InsecureCredentials(&tc.check, false)).To(Succeed())
		})
	}
	t.Run("https", func(t *testing.T) {
		g := NewWithT(t)
		c := convoyv1alpha1.RolloutCheck{HTTP: &convoyv1alpha1.HTTPCheck{URL: "https://hook/judge", SecretRef: ref}}
		g.Expect(InsecureCredentials(&c, false)).To(Succeed())
	})
}

// setSecretRef sets the secretRef of c's kind.
func setSecretRef(c *convoyv1alpha1.RolloutCheck, ref *convoyv1alpha1.SecretReference) {
	switch {
	case c.HTTP != nil:
		c.HTTP.SecretRef = ref
	case c.Prometheus != nil:
		c.Prometheus.SecretRef = ref
	case c.Alerts != nil:
		c.Alerts.SecretRef = ref
	}
}
