package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/procstat"
	"github.com/convoy-gitops/convoy/rollout/checks"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/monitoring"
)

// Names of the rollouts the signal cases make.
const (
	// riskKey is HyperShift's partition label.
	riskKey = "hypershift.openshift.io/risk-group"
	// signalsFleetLabel selects the two HostedClusters of the signal cases.
	signalsFleetLabel = "test.convoy.dev/signals"
	// checkName is the hostile check of every signal case.
	checkName = "hostile"
	// checkSecret is the Secret, holding the planted credential as its token, that a case's
	// check may name.
	checkSecret = "check-creds"
)

// checkBound is how fast a check must be reported: the first partition's Package progressing,
// then one evaluation of a check that times out in a second or two.
const checkBound = 30 * time.Second

// silentSlack is how much longer than its timeout a check's connection to a server that never
// answers may stay open: the time to notice the deadline and close, on a busy machine.
const silentSlack = 3 * time.Second

// queryBound is how fast an expensive query must be reported: the controller's deadline of a
// Prometheus query (10 s), after the first partition progressed.
const queryBound = 45 * time.Second

// prometheusMemoryLimit is the GOMEMLIMIT of the cases' Prometheus, which the expensive query
// would otherwise grow by a GiB or more before it times out.
const prometheusMemoryLimit = "256MiB"

// expensiveQuery costs Prometheus far more than the 9 s convoy gives it (Prometheus answers
// "query timed out") while its memory stays near a GiB: a day of one-second steps, for each hour of
// a year. The label_replace keeps Prometheus from folding the constant subquery. Note:
// count_over_time(vector(1)[10y:1s]) is not used: Prometheus v0.316.0 materializes its 315
// million points (over 10 GiB) and goes on after its timeout and the client's disconnection.
const expensiveQuery = `sum_over_time(count_over_time(label_replace(vector(time()), "a", "$1", "", "(.*)")[1d:1s])[1y:1h])`

// signalRun is what the signal cases share: a real Prometheus, the hostile servers and two
// HostedClusters, early and late; each case rolls a commit out to them under one hostile check
// and late must never get it.
type signalRun struct {
	*run
	mon         *monitoring.Monitoring
	early, late *fleet.HostedCluster
	silent      *silentServer
	httpFlood   *floodServer
	promFlood   *floodServer
	redirect    *countingServer
	elsewhere   *countingServer
	echo        *countingServer
	// refused is the address of the checks whose spec is refused: it must get no request.
	refused *countingServer
	// listener is the https:// address of the checks whose Secret is refused, and cleartext
	// the http:// one of the check whose credentials would go in clear: neither may get a
	// request.
	listener, cleartext *countingServer
	metricsURL          string
}

// startSignals starts what the signal cases share.
func startSignals(t *testing.T, r *run) *signalRun {
	t.Helper()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(r.ctx, 2*time.Minute)
	defer cancel()
	s := &signalRun{run: r, silent: newSilentServer(t)}
	var err error
	s.mon, err = monitoring.Start(ctx, monitoring.Options{PrometheusMemoryLimit: prometheusMemoryLimit})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = s.mon.Stop() })
	hcs, err := env.AddHostedClusters(ctx,
		fleet.HostedClusterInput{Name: "signals-early", Labels: map[string]string{riskKey: "early", signalsFleetLabel: "true"}},
		fleet.HostedClusterInput{Name: "signals-late", Labels: map[string]string{riskKey: "late", signalsFleetLabel: "true"}})
	g.Expect(err).NotTo(HaveOccurred())
	for _, hc := range hcs {
		t.Cleanup(func() { _ = hc.StopAPIServer() })
	}
	s.early, s.late = hcs[0], hcs[1]
	s.httpFlood = newFloodServer(t, http.StatusServiceUnavailable, "text/plain", "", "overloaded ")
	s.promFlood = newFloodServer(t, http.StatusOK, "application/json",
		`{"status":"success","data":{"resultType":"vector","result":[`, `{"metric":{},"value":[0,"0"]},`)
	s.elsewhere = newCountingServer(t, false, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	elsewhere := strings.Replace(s.elsewhere.URL, "127.0.0.1", "localhost", 1) + "/collect"
	s.redirect = newCountingServer(t, true, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere, http.StatusTemporaryRedirect)
	})
	s.echo = newCountingServer(t, true, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte("denied; you sent " + r.Header.Get("Authorization")))
	})
	ok := func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }
	s.refused, s.listener, s.cleartext = newCountingServer(t, true, ok), newCountingServer(t, true, ok), newCountingServer(t, false, ok)
	s.metricsURL = "http://" + r.ctrl.MetricsAddress() + "/metrics"
	return s
}

// signalCase is one hostile check: a rollout to early and late under it must hold late, with
// the check's state, reason and message on the HostedClusterPackage's status.
type signalCase struct {
	name string
	// check is the hostile check; its name is set to checkName.
	check convoyv1alpha1.RolloutCheck
	// withSecret points the check's secretRef at a Secret of the rollout's namespace (its
	// GitSource's) holding the planted credential and the test servers' CA.
	withSecret bool
	// secret, when set, makes a hostile Secret for the rollout of namespace ns and returns the
	// secretRef the check names.
	secret func(g Gomega, s *signalRun, ns string) *convoyv1alpha1.SecretReference
	// state is the check's expected state in early; empty when the spec itself is refused.
	state string
	// reason is the event reason of the check's state (CheckFailed, CheckInconclusive), or the
	// reason of Stalled when state is empty.
	reason string
	// message holds substrings of the check's message (of Stalled's when state is empty).
	message []string
	// within bounds the time from the rollout's creation to the answer.
	within time.Duration
	// verify checks more, once the answer is in.
	verify func(g Gomega, rollout string, c *convoyv1alpha1.CheckStatus)
}

// signalCorpus is the table of hostile checks (issue 43). Each is bounded (a second's timeout,
// rollout/checks' bounds on what it reads) and reported; none lets late take the commit.
func (s *signalRun) signalCorpus() []signalCase {
	httpCheck := func(url string, timeout int32) convoyv1alpha1.RolloutCheck {
		return convoyv1alpha1.RolloutCheck{IntervalSeconds: 1, HTTP: &convoyv1alpha1.HTTPCheck{URL: url, TimeoutSeconds: timeout}}
	}
	promCheck := func(address, query string) convoyv1alpha1.RolloutCheck {
		return convoyv1alpha1.RolloutCheck{IntervalSeconds: 1, Prometheus: &convoyv1alpha1.PrometheusCheck{
			Address: address, Query: query, SuccessCondition: "size(values) == 0"}}
	}
	return append([]signalCase{
		{name: "rollout check: an HTTP URL that accepts and never answers", check: httpCheck(s.silent.URL()+"/judge", 1),
			state: convoyv1alpha1.CheckInconclusive, reason: convoyv1alpha1.CheckInconclusiveReason, within: checkBound,
			message: []string{"POST " + s.silent.URL() + "/judge: no answer before the timeout"},
			verify: func(g Gomega, rollout string, _ *convoyv1alpha1.CheckStatus) {
				g.Eventually(func(g Gomega) {
					g.Expect(s.checkOf(g, rollout).Inconclusive).To(BeNumerically(">=", 2))
				}).WithTimeout(10*time.Second).Should(Succeed(), "the check is evaluated again: the worker was freed")
				g.Expect(s.silent.closed.Load()).To(BeNumerically(">=", 1), "the controller hung up")
				g.Expect(time.Duration(s.silent.longestHeld.Load())).To(BeNumerically("<", time.Second+silentSlack),
					"the evaluation ends at its timeoutSeconds (1)")
			}},
		{name: "rollout check: an HTTP URL that answers 1 GiB", check: httpCheck(s.httpFlood.URL, 2),
			state: convoyv1alpha1.CheckFailed, reason: convoyv1alpha1.CheckFailedReason, within: checkBound,
			message: []string{"POST " + s.httpFlood.URL + " answered 503 Service Unavailable: overloaded overloaded"},
			verify: func(g Gomega, _ string, c *convoyv1alpha1.CheckStatus) {
				expectReadBounded(g, s.httpFlood, checks.MaxHTTPBody)
				g.Expect(len(c.Message)).To(BeNumerically("<=", checks.MaxMessageBytes))
			}},
		{name: "rollout check: a Prometheus address that answers 1 GiB", check: promCheck(s.promFlood.URL, "up"),
			state: convoyv1alpha1.CheckInconclusive, reason: convoyv1alpha1.CheckInconclusiveReason, within: checkBound,
			message: []string{"query `up` at " + s.promFlood.URL + ": the answer exceeds 4194304 bytes"},
			verify: func(g Gomega, _ string, _ *convoyv1alpha1.CheckStatus) {
				expectReadBounded(g, s.promFlood, checks.MaxPrometheusBody)
			}},
		{name: "rollout check: an HTTP URL that redirects to another host", check: httpCheck(s.redirect.URL, 2), withSecret: true,
			state: convoyv1alpha1.CheckFailed, reason: convoyv1alpha1.CheckFailedReason, within: checkBound,
			message: []string{"POST " + s.redirect.URL + " answered 307 Temporary Redirect, a redirect to the host localhost:",
				"redirects are not followed"},
			verify: func(g Gomega, _ string, _ *convoyv1alpha1.CheckStatus) {
				g.Expect(s.redirect.authorized.Load()).To(BeNumerically(">=", 1), "the credentials go to the check's own address")
				g.Expect(s.elsewhere.requests.Load()).To(BeZero(), "the redirect was followed")
			}},
		{name: "rollout check: a Prometheus address that is the controller's own `/metrics`", check: promCheck(s.metricsURL, "up"),
			state: convoyv1alpha1.CheckInconclusive, reason: convoyv1alpha1.CheckInconclusiveReason, within: checkBound,
			message: []string{"query `up` at " + s.metricsURL + ": answered HTTP 404, not Prometheus's API: 404 page not found"}},
		{name: "rollout check: an expensive PromQL query", check: promCheck(s.mon.PrometheusURL, expensiveQuery),
			state: convoyv1alpha1.CheckInconclusive, reason: convoyv1alpha1.CheckInconclusiveReason, within: queryBound,
			message: []string{"query `" + expensiveQuery + "` at " + s.mon.PrometheusURL + ": "},
			verify:  func(g Gomega, _ string, _ *convoyv1alpha1.CheckStatus) { s.expectPrometheusBounded(g) }},
		{name: "rollout check: a server that echoes the check's credential", check: httpCheck(s.echo.URL, 2), withSecret: true,
			state: convoyv1alpha1.CheckFailed, reason: convoyv1alpha1.CheckFailedReason, within: checkBound,
			message: []string{"POST " + s.echo.URL + " answered 403 Forbidden: denied; you sent Bearer [redacted]"},
			verify: func(g Gomega, _ string, _ *convoyv1alpha1.CheckStatus) {
				g.Expect(s.echo.authorized.Load()).To(BeNumerically(">=", 1), "the credentials go to the check's own address")
			}},
		{name: "rollout check: a URL that is a template (to leak a Secret into it)", withSecret: true,
			check:  httpCheck(s.refused.URL+`/{{ .HostedClusterPackage }}`, 2),
			reason: convoyv1alpha1.InvalidSpecReason, within: answerBound,
			message: []string{"spec.checks[0] (check " + checkName + "): http.url must be an absolute http or https URL",
				"is not a template; only queries and matchers are"}},
		{name: "rollout check: a query template that reaches for a Secret", withSecret: true,
			check:  promCheck(s.refused.URL, `up{token="{{ .Secret.token }}"}`),
			reason: convoyv1alpha1.InvalidSpecReason, within: checkBound,
			message: []string{"check " + checkName + " of partition early: prometheus.query", "Secret"}},
	}, s.credentialCorpus()...)
}

// expectReadBounded checks that no answer of f was read much beyond bound: what the kernel
// accepted of it is the bytes read plus the sockets' buffers, far below the 1 GiB offered.
func expectReadBounded(g Gomega, f *floodServer, bound int) {
	g.Expect(f.requests.Load()).To(BeNumerically(">=", 1))
	g.Eventually(f.maxWritten.Load).Should(BeNumerically(">", bound), "the answer was written past the bound")
	g.Expect(f.maxWritten.Load()).To(BeNumerically("<", int64(bound)+32<<20), "bytes of one answer taken by the client")
}

// runSignalCase rolls a commit out to early and late under the case's check and checks the
// answer: the check's state, reason and message (or Stalled), late never on the commit, the
// controller alive and the healthy Package still progressing.
func (s *signalRun) runSignalCase(t *testing.T, sc signalCase) answer {
	t.Helper()
	g := NewWithT(t)
	name, commit := s.newRollout(t, sc)
	start := time.Now()
	var out answer
	if sc.state == "" {
		out = s.expectRolloutStalled(g, sc, name)
	} else {
		out = s.expectCheckAnswer(g, sc, name)
	}
	out.name, out.took = sc.name, time.Since(start)
	g.Consistently(func(g Gomega) { s.expectLateNotOn(g, name, commit) }).
		WithTimeout(time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	obj := s.getRollout(g, name)
	raw, err := json.Marshal(obj.Status)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).NotTo(ContainSubstring(planted), "the rollout's status holds the planted credential")
	out.peakRSS = s.expectControllerAlive(g)
	s.expectHealthyProgress(g, sc.name)
	return out
}

// newRollout makes a namespace with a repository holding one commit, its GitSource, the Secret
// and a HostedClusterPackage over early and late under the case's check; it returns the
// HostedClusterPackage's name and the commit. The rollout is deleted when the case ends.
func (s *signalRun) newRollout(t *testing.T, sc signalCase) (string, string) {
	t.Helper()
	g := NewWithT(t)
	ns := fleet.NewNamespaceIn(t, s.c)
	repo, err := s.git.CreateRepo(ns)
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := repo.Commit("main", "add-on", map[string]string{
		packagePath + "/manifest.yaml": "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: addon}\nspec:\n  phases:\n  - {name: deploy}\n",
		packagePath + "/addon.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: addon-" + ns +
			", annotations: {convoy.dev/phase: deploy}}\ndata: {v: \"1\"}\n",
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.c.Create(s.ctx, &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gitSourceName},
		Spec: convoyv1alpha1.GitSourceSpec{URL: s.git.HTTPURL(ns), Ref: convoyv1alpha1.GitRef{Branch: "main"},
			Interval: &metav1.Duration{Duration: time.Second}}})).To(Succeed())
	check := sc.check
	check.Name = checkName
	if sc.withSecret {
		g.Expect(s.c.Create(s.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: checkSecret},
			StringData: map[string]string{checks.TokenKey: planted, checks.CAKey: testCA(s.echo)}})).To(Succeed())
		setSecretRef(&check, &convoyv1alpha1.SecretReference{Namespace: ns, Name: checkSecret})
	}
	if sc.secret != nil {
		setSecretRef(&check, sc.secret(g, s, ns))
	}
	obj := signalRollout(ns, check)
	g.Expect(s.c.Create(s.ctx, obj)).To(Succeed())
	t.Cleanup(func() { _ = s.c.Delete(context.Background(), obj) })
	return obj.Name, commit
}

// setSecretRef points the check's secretRef at ref.
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

// signalRollout is the HostedClusterPackage of a signal case: the package of ns's GitSource to
// early, then late, under check.
func signalRollout(ns string, check convoyv1alpha1.RolloutCheck) *convoyv1alpha1.HostedClusterPackage {
	one := intstr.FromInt32(1)
	return &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			HostedClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{signalsFleetLabel: "true"}},
			Partition: &convoyv1alpha1.PartitionSpec{LabelKey: riskKey,
				Order: convoyv1alpha1.PartitionOrder{Static: []string{"early", "late"}}},
			Strategy: convoyv1alpha1.HostedClusterPackageStrategy{
				RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{MaxUnavailable: &one}},
			Template: convoyv1alpha1.PackageTemplate{Spec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Namespace: ns, Name: gitSourceName}, Path: packagePath,
				Interval: &metav1.Duration{Duration: time.Minute}}},
			Checks: []convoyv1alpha1.RolloutCheck{check},
		},
	}
}

// expectCheckAnswer waits for the check of early in the case's state with its message and an
// event of the case's reason naming the check, runs the case's verify and returns the answer.
func (s *signalRun) expectCheckAnswer(g Gomega, sc signalCase, name string) answer {
	var c convoyv1alpha1.CheckStatus
	g.Eventually(func(g Gomega) {
		c = s.checkOf(g, name)
		g.Expect(c.State).To(Equal(sc.state))
		for _, part := range sc.message {
			g.Expect(c.Message).To(ContainSubstring(part))
		}
	}).WithTimeout(sc.within).WithPolling(100*time.Millisecond).Should(Succeed(), func() string {
		return "the status: " + s.describeRollout(name)
	})
	g.Eventually(func(g Gomega) {
		g.Expect(s.eventNotes(g, name, sc.reason)).To(ContainElement(ContainSubstring("Check " + checkName)))
	}).
		WithTimeout(5*time.Second).Should(Succeed(), "an event %s names the check", sc.reason)
	if sc.verify != nil {
		sc.verify(g, name, &c)
	}
	return answer{reason: sc.reason, message: c.Message, condition: "check `" + c.State + "`, `" + sc.reason + "`"}
}

// expectRolloutStalled waits for Stalled with the case's reason and message on the rollout.
func (s *signalRun) expectRolloutStalled(g Gomega, sc signalCase, name string) answer {
	var stalled metav1.Condition
	g.Eventually(func(g Gomega) {
		stalled = conditionOf(s.getRollout(g, name).Status.Conditions, convoyv1alpha1.StalledCondition)
		g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue), "Stalled")
		g.Expect(stalled.Reason).To(Equal(sc.reason))
		for _, part := range sc.message {
			g.Expect(stalled.Message).To(ContainSubstring(part))
		}
	}).WithTimeout(sc.within).WithPolling(100*time.Millisecond).Should(Succeed(), func() string {
		return "the status: " + s.describeRollout(name)
	})
	g.Expect(s.refused.requests.Load()).To(BeZero(), "a request for a spec that is refused")
	if sc.verify != nil {
		sc.verify(g, name, nil)
	}
	return answer{reason: sc.reason, message: stalled.Message}
}

// getRollout reads a HostedClusterPackage.
func (s *signalRun) getRollout(g Gomega, name string) *convoyv1alpha1.HostedClusterPackage {
	obj := &convoyv1alpha1.HostedClusterPackage{}
	g.Expect(s.c.Get(s.ctx, client.ObjectKey{Name: name}, obj)).To(Succeed())
	return obj
}

// checkOf returns the hostile check of early in the rollout's status.
func (s *signalRun) checkOf(g Gomega, name string) convoyv1alpha1.CheckStatus {
	for _, p := range s.getRollout(g, name).Status.Partitions {
		if p.Name != "early" {
			continue
		}
		for _, c := range p.Checks {
			if c.Name == checkName {
				return c
			}
		}
	}
	g.Expect("no check").To(Equal(checkName+" of partition early"), "the check is reported")
	return convoyv1alpha1.CheckStatus{}
}

// describeRollout returns the rollout's status, for a failure message.
func (s *signalRun) describeRollout(name string) string {
	obj := &convoyv1alpha1.HostedClusterPackage{}
	if err := s.c.Get(s.ctx, client.ObjectKey{Name: name}, obj); err != nil {
		return err.Error()
	}
	raw, _ := json.MarshalIndent(obj.Status, "", "  ")
	return string(raw)
}

// eventNotes returns the notes of the rollout's events of reason.
func (s *signalRun) eventNotes(g Gomega, name, reason string) []string {
	list := &eventsv1.EventList{}
	g.Expect(s.c.List(s.ctx, list)).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "HostedClusterPackage" && e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

// expectLateNotOn checks that no Package of the rollout in late's HCP namespace is on commit.
func (s *signalRun) expectLateNotOn(g Gomega, name, commit string) {
	list := &convoyv1alpha1.PackageList{}
	g.Expect(s.c.List(s.ctx, list, client.InNamespace(s.late.HCPNamespace),
		client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: name})).To(Succeed())
	for _, p := range list.Items {
		g.Expect(p.Spec.Revision).NotTo(Equal(commit), "late's Package moved past the gate")
	}
}

// prometheusPeakBound is the most resident memory the cases' Prometheus may have used. The
// expensive query holds its inner subquery's 31.6 million points at once (half a GiB, twice that
// while the slice grows), which GOMEMLIMIT cannot free; on a loaded machine the collector lags
// behind and the peak has reached 1.1 GiB. What the bound catches is a query that runs away: the
// one this case used before grew Prometheus beyond 10 GiB.
const prometheusPeakBound = 2 << 30

// expectPrometheusBounded checks that Prometheus runs under prometheusMemoryLimit and that the
// expensive query did not grow its memory beyond prometheusPeakBound.
func (s *signalRun) expectPrometheusBounded(g Gomega) {
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", s.mon.PIDs()[0]))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Split(string(environ), "\x00")).To(ContainElement("GOMEMLIMIT="+prometheusMemoryLimit),
		"Prometheus runs under the memory limit")
	for _, pid := range s.mon.PIDs() {
		peak, err := procstat.PeakRSS(pid)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(peak).To(BeNumerically("<", prometheusPeakBound), "the peak RSS of process %d of the monitoring", pid)
	}
}
