package hostile

import (
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/checks"
)

// credentialCorpus is the table of checks that name credentials they may not have (issue 62):
// a Secret of kube-system, one of another tenant, a service account token, and credentials
// that would go over http://. Each is refused with a message naming the Secret and the rule,
// and the check's address gets no request.
func (s *signalRun) credentialCorpus() []signalCase {
	check := func(url string) convoyv1alpha1.RolloutCheck {
		return convoyv1alpha1.RolloutCheck{IntervalSeconds: 1, HTTP: &convoyv1alpha1.HTTPCheck{URL: url, TimeoutSeconds: 2}}
	}
	nothingSent := func(g Gomega, _ string, _ *convoyv1alpha1.CheckStatus) {
		g.Expect(s.listener.requests.Load()).To(BeZero(), "the check's address got a request")
	}
	outside := []string{"of the check's secretRef is refused, and nothing was sent: a check reads a Secret only in the namespace " +
		"of the HostedClusterPackage's GitSource", `annotation convoy.dev/check-credentials lists the HostedClusterPackage`}
	return []signalCase{
		{name: "rollout check: a Secret of `kube-system`", check: check(s.listener.URL + "/judge"),
			secret: func(g Gomega, s *signalRun, ns string) *convoyv1alpha1.SecretReference {
				return s.plantSecret(g, "kube-system", "hostile-"+ns, corev1.SecretTypeOpaque)
			},
			state: convoyv1alpha1.CheckInconclusive, reason: convoyv1alpha1.CheckInconclusiveReason, within: checkBound,
			message: append([]string{"Secret kube-system/hostile-"}, outside...), verify: nothingSent},
		{name: "rollout check: another tenant's Secret", check: check(s.listener.URL + "/judge"),
			secret: func(g Gomega, s *signalRun, ns string) *convoyv1alpha1.SecretReference {
				return s.plantSecret(g, s.healthy.ns, "hostile-"+ns, corev1.SecretTypeOpaque)
			},
			state: convoyv1alpha1.CheckInconclusive, reason: convoyv1alpha1.CheckInconclusiveReason, within: checkBound,
			message: outside, verify: nothingSent},
		{name: "rollout check: a service account token Secret beside the GitSource", check: check(s.listener.URL + "/judge"),
			secret: func(g Gomega, s *signalRun, ns string) *convoyv1alpha1.SecretReference {
				return s.plantSecret(g, ns, "sa-token", corev1.SecretTypeServiceAccountToken)
			},
			state: convoyv1alpha1.CheckInconclusive, reason: convoyv1alpha1.CheckInconclusiveReason, within: checkBound,
			message: []string{"/sa-token of the check's secretRef is refused, and nothing was sent: it is of type " +
				"kubernetes.io/service-account-token; a check reads only Secrets of type Opaque"}, verify: nothingSent},
		{name: "rollout check: credentials over `http://`", check: check(s.cleartext.URL + "/judge"), withSecret: true,
			reason: convoyv1alpha1.InvalidSpecReason, within: answerBound,
			message: []string{"spec.checks[0] (check " + checkName + ", credentials of Secret ",
				"http.url must be an https:// URL when secretRef names credentials (http:// only with the controller flag --check-allow-insecure-http): is " +
					s.cleartext.URL + "/judge"},
			verify: func(g Gomega, _ string, _ *convoyv1alpha1.CheckStatus) {
				g.Expect(s.cleartext.requests.Load()).To(BeZero(), "the credentials went over http://")
			}},
	}
}

// plantSecret creates a Secret of type typ in ns holding the planted credential as its token
// and the test servers' CA, and returns the secretRef naming it.
func (s *signalRun) plantSecret(g Gomega, ns, name string, typ corev1.SecretType) *convoyv1alpha1.SecretReference {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ,
		StringData: map[string]string{checks.TokenKey: planted, checks.CAKey: testCA(s.listener)}}
	if typ == corev1.SecretTypeServiceAccountToken {
		secret.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
	}
	g.Expect(s.c.Create(s.ctx, secret)).To(Succeed())
	return &convoyv1alpha1.SecretReference{Namespace: ns, Name: name}
}
