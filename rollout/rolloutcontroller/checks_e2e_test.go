package rolloutcontroller

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// checkToken is the bearer token of the HTTP check of TestCheckCredentialsAndSpecErrors: it must
// appear nowhere but in the request's header.
const checkToken = "tok-7f3a9c51e2d84b06"

// tokenServer answers, over TLS (credentials go over https:// only), 200 to a request carrying
// checkToken as its bearer token and 401 to any other, echoing the Authorization header it got
// in both answers, so that a leak of the token into what the controller writes would show. It
// counts its requests.
func tokenServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		got := r.Header.Get("Authorization")
		if got != "Bearer "+checkToken {
			w.WriteHeader(http.StatusUnauthorized)
		}
		_, _ = w.Write([]byte("you sent " + got))
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// TestCheckCredentialsAndSpecErrors rolls a commit out to two HostedClusters of one partition
// under an HTTP check whose secretRef names a Secret that does not exist yet: the check is
// inconclusive, naming the Secret, and holds the completion; once the Secret holds the token,
// the check passes and the rollout completes, the token in no status, event or log line. A
// check whose condition does not compile then stalls with InvalidSpec naming the check, the
// field and the rule, without a request.
func TestCheckCredentialsAndSpecErrors(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	f := &rolloutFleet{t: t, name: "creds-" + fleet.NameSuffix(), ns: env.NewNamespace(t), clusters: map[string]*fleet.HostedCluster{}}
	f.repo = newSource(t, f.ns)
	c1 := f.commitFiles(addonPackage(1, "0.01"))
	f.addClusters(prefixed(f.name, []string{"e1:early", "e2:early"}, "")...)
	srv, requests := tokenServer(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "check-creds"},
		StringData: map[string]string{"token": checkToken + "\n",
			"ca.crt": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))}}
	newHostedClusterPackage(t, f.name, f.ns, func(o *convoyv1alpha1.HostedClusterPackage) {
		o.Spec.Checks = []convoyv1alpha1.RolloutCheck{{Name: "web", IntervalSeconds: 1,
			HTTP: &convoyv1alpha1.HTTPCheck{URL: srv.URL + "/judge", TimeoutSeconds: 2,
				SecretRef: &convoyv1alpha1.SecretReference{Namespace: secret.Namespace, Name: secret.Name}}}}
	})

	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, f.name).Status
		g.Expect(partitionChecks(g, st, "early")).To(ConsistOf(And(HaveField("Name", "web"),
			HaveField("State", convoyv1alpha1.CheckInconclusive),
			HaveField("Message", ContainSubstring("Secret "+f.ns+"/check-creds of the check's secretRef is not found")))))
		g.Expect(st.Gate).To(And(HaveField("Type", convoyv1alpha1.GateCheck), HaveField("Partition", "early")))
		g.Expect(st.CurrentRevision).To(BeEmpty(), "an inconclusive check holds the completion")
	}).Should(Succeed(), "a missing Secret is inconclusive, never a pass")
	g.Expect(requests.Load()).To(BeZero(), "no request without the credentials the check names")

	g.Expect(env.Client.Create(context.Background(), secret)).To(Succeed())
	f.expectComplete(g, c1, 2)
	g.Expect(partitionNamed(getHCPkg(g, f.name).Status, "early").Checks).To(ConsistOf(And(HaveField("Name", "web"),
		HaveField("State", convoyv1alpha1.CheckPassed), HaveField("LastValue", ContainSubstring("200")))))
	f.expectNoLeak(g, checkToken)

	f.editSpec(g, func(spec *convoyv1alpha1.HostedClusterPackageSpec) {
		spec.Checks = append(spec.Checks, convoyv1alpha1.RolloutCheck{Name: "bad", IntervalSeconds: 1,
			Prometheus: &convoyv1alpha1.PrometheusCheck{Address: srv.URL, Query: "up", SuccessCondition: "values.all(v, v >"}})
	})
	before := requests.Load()
	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, f.name).Status
		g.Expect(metaCondition(st.Conditions, convoyv1alpha1.StalledCondition)).To(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", convoyv1alpha1.InvalidSpecReason),
			HaveField("Message", And(ContainSubstring("spec.checks[1] (check bad)"), ContainSubstring("prometheus.successCondition")))))
	}).Should(Succeed(), "a check that does not compile stalls with InvalidSpec")
	g.Expect(requests.Load()).To(Equal(before), "no I/O for a spec that does not compile")
}

// expectNoLeak checks that secret appears in no status, event or log line of the test's
// HostedClusterPackage.
func (f *rolloutFleet) expectNoLeak(g *WithT, secret string) {
	f.t.Helper()
	raw, err := json.Marshal(getHCPkg(g, f.name).Status)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).NotTo(ContainSubstring(secret), "status")
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(context.Background(), list)).To(Succeed())
	for _, e := range list.Items {
		g.Expect(e.Note).NotTo(ContainSubstring(secret), "event %s", e.Reason)
	}
	// Note: the log is read a moment later, so that the lines of the last pass are in.
	time.Sleep(500 * time.Millisecond)
	g.Expect(strings.Contains(controllerLog.String(), secret)).To(BeFalse(), "log")
}

// partitionChecks returns the checks of partition name in st, which must report it.
func partitionChecks(g Gomega, st convoyv1alpha1.HostedClusterPackageStatus, name string) []convoyv1alpha1.CheckStatus {
	p := partitionNamed(st, name)
	g.Expect(p).NotTo(BeNil(), "partition %s", name)
	return p.Checks
}
