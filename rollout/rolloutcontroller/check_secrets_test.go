package rolloutcontroller

import (
	"context"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// secretsRollout is a HostedClusterPackage named addon whose GitSource is in namespace mon.
func secretsRollout() *convoyv1alpha1.HostedClusterPackage {
	obj := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon", UID: "u1", Generation: 1}}
	obj.Spec.Template.Spec.SourceRef = convoyv1alpha1.SourceReference{Namespace: "mon", Name: "addons"}
	return obj
}

// secretsReader returns a reader of objs that answers Forbidden for a Secret named forbidden.
func secretsReader(g Gomega, objs ...client.Object) client.Reader {
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if key.Name == "forbidden" {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, errors.New("no"))
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
}

// TestReadCheckSecretNamesTheSecretNeverAValue: a missing Secret, one without usable keys and
// one the API server refuses are problems naming the Secret; a token is read, trimmed.
func TestReadCheckSecretNamesTheSecretNeverAValue(t *testing.T) {
	g := NewWithT(t)
	r := &HostedClusterPackageReconciler{Secrets: secretsReader(g,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: "token"}, Data: map[string][]byte{"token": []byte("s3cr3t\n")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mon", Name: "empty"}, Data: map[string][]byte{"tokn": []byte("s3cr3t")}})}
	read := func(name string) checkCredentials {
		return r.readCheckSecret(context.Background(), secretsRollout(), types.NamespacedName{Namespace: "mon", Name: name})
	}
	g.Expect(read("token").creds).To(HaveField("Token", "s3cr3t"))
	g.Expect(read("missing").problem).To(Equal("Secret mon/missing of the check's secretRef is not found"))
	g.Expect(read("empty").problem).To(And(HavePrefix("Secret mon/empty of the check's secretRef: "),
		ContainSubstring("token"), Not(ContainSubstring("s3cr3t"))))
	g.Expect(read("forbidden").problem).To(Equal("reading Secret mon/forbidden of the check's secretRef: Forbidden (403)"))
}

// TestReadCheckSecretKeepsToSecretsTheOwnerCouldName: a check reads an Opaque Secret of its
// GitSource's namespace, or one of another namespace whose annotation lists the rollout (or
// "*"); any other is refused with a problem naming the Secret and the rule, and its token is
// never used.
func TestReadCheckSecretKeepsToSecretsTheOwnerCouldName(t *testing.T) {
	secret := func(ns, name string, typ corev1.SecretType, optIn string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ,
			Data: map[string][]byte{"token": []byte("s3cr3t")}}
		if optIn != "" {
			s.Annotations = map[string]string{convoyv1alpha1.CheckCredentialsAnnotation: optIn}
		}
		return s
	}
	const outside = "Secret %s of the check's secretRef is refused, and nothing was sent: a check reads a Secret only in the " +
		"namespace of the HostedClusterPackage's GitSource (mon), or one whose annotation convoy.dev/check-credentials lists " +
		`the HostedClusterPackage addon (or is "*")`
	cases := []struct {
		name    string
		secret  *corev1.Secret
		problem string
	}{
		{"the GitSource's namespace, Opaque", secret("mon", "s", corev1.SecretTypeOpaque, ""), ""},
		{"the GitSource's namespace, no type", secret("mon", "s", "", ""), ""},
		{"another namespace, opted in by name", secret("team-b", "s", corev1.SecretTypeOpaque, "other, addon"), ""},
		{"another namespace, opted in for all", secret("team-b", "s", corev1.SecretTypeOpaque, "*"), ""},
		{"kube-system", secret("kube-system", "s", corev1.SecretTypeOpaque, ""), fmtProblem(outside, "kube-system/s")},
		{"another tenant's", secret("team-b", "s", corev1.SecretTypeOpaque, ""), fmtProblem(outside, "team-b/s")},
		{"opted in for another rollout", secret("team-b", "s", corev1.SecretTypeOpaque, "other,addon-2"), fmtProblem(outside, "team-b/s")},
		{"a service account token", secret("mon", "s", corev1.SecretTypeServiceAccountToken, ""),
			"Secret mon/s of the check's secretRef is refused, and nothing was sent: it is of type kubernetes.io/service-account-token; " +
				"a check reads only Secrets of type Opaque"},
		{"a basic-auth Secret opted in", secret("team-b", "s", corev1.SecretTypeBasicAuth, "*"),
			"Secret team-b/s of the check's secretRef is refused, and nothing was sent: it is of type kubernetes.io/basic-auth; " +
				"a check reads only Secrets of type Opaque"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &HostedClusterPackageReconciler{Secrets: secretsReader(g, tc.secret)}
			got := r.readCheckSecret(context.Background(), secretsRollout(), client.ObjectKeyFromObject(tc.secret))
			g.Expect(got.problem).To(Equal(tc.problem))
			if tc.problem != "" {
				g.Expect(got.creds).To(BeNil(), "a refused Secret's token is not used")
			} else {
				g.Expect(got.creds).To(HaveField("Token", "s3cr3t"))
			}
		})
	}
}

// fmtProblem fills the Secret into a problem's format.
func fmtProblem(format, secret string) string {
	return fmt.Sprintf(format, secret)
}

// TestCredentialsOverHTTPStallBeforeAnyRead: a check whose secretRef credentials would go to
// an http:// address stalls with InvalidSpec naming the check, the Secret, the field, the rule
// and the flag; with --check-allow-insecure-http it compiles.
func TestCredentialsOverHTTPStallBeforeAnyRead(t *testing.T) {
	g := NewWithT(t)
	obj := secretsRollout()
	check := promCheck("errors", "size(values) == 0")
	check.Prometheus.SecretRef = &convoyv1alpha1.SecretReference{Namespace: "mon", Name: "prom"}
	obj.Spec.Checks = []convoyv1alpha1.RolloutCheck{check}
	_, err := (&HostedClusterPackageReconciler{}).compiledChecksOf(obj)
	out := pass.Classify(err, 0)
	g.Expect([]any{out.Class, out.Reason}).To(Equal([]any{pass.ClassStalled, convoyv1alpha1.InvalidSpecReason}))
	g.Expect(out.Message).To(Equal("spec.checks[0] (check errors, credentials of Secret mon/prom): prometheus.address must be an " +
		"https:// URL when secretRef names credentials (http:// only with the controller flag --check-allow-insecure-http): " +
		"is http://prometheus.monitoring:9090"))

	allowed := &HostedClusterPackageReconciler{Checks: CheckOptions{AllowInsecureHTTP: true}}
	compiled, err := allowed.compiledChecksOf(obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(compiled.byKey).To(HaveLen(1))
}
