package hostile

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// peakRSSBound is the most resident memory (VmHWM) the controller may ever have used in a run.
const peakRSSBound = 400 << 20

// planted is the credential the hostile inputs carry; it must reach no surface.
const planted = "Hostile-Planted-9c2e"

// hostileCase is one input of the corpus: a tenant Ready at a good revision gets a hostile
// commit and/or a hostile change of its objects, and must answer with a clear condition.
type hostileCase struct {
	// name says what was tried; it is the first column of the table in docs/evidence/reliability.md.
	name string
	// hosted gives the tenant a hosted cluster, reached through the kubeconfig Secret "kc".
	hosted bool
	// serviceAccount locks the Package down to this ServiceAccount of the tenant's namespace,
	// which may manage ConfigMaps and RoleBindings only.
	serviceAccount string
	// commit is the hostile commit, on top of the good revision; nil for none.
	commit []gitserver.File
	// attack makes a hostile change of the tenant's objects; nil for none.
	attack func(g Gomega, r *run, tn *tenant)
	// onGitSource says the condition is on the GitSource, not on the Package.
	onGitSource bool
	// reason is the expected reason of Stalled=True (and Ready=False).
	reason string
	// retried says the refusal is retried rather than stalled: Ready=False with reason, and
	// the message, and no Stalled=True.
	retried bool
	// message holds substrings of the condition's message; $NS is the tenant's namespace and
	// $HEALTHY the healthy tenant's.
	message []string
	// absent are objects that must never be created.
	absent []objectRef
	// within bounds the time from the hostile change to the condition.
	within time.Duration
	// verify, when set, checks more once the condition is in.
	verify func(g Gomega, r *run)
}

// objectRef names an object of the management cluster; namespace "$NS" is the tenant's and ""
// is for a cluster-scoped object.
type objectRef struct{ apiVersion, kind, namespace, name string }

// answer is what convoy answered to one case.
type answer struct {
	name, reason, message string
	// retried says the condition is Ready=False only, not Stalled.
	retried bool
	// condition, when set, is what the table says convoy answered with (a check's state).
	condition string
	took      time.Duration
	peakRSS   int64
}

// runCase runs one case and checks everything the corpus promises.
func (r *run) runCase(t *testing.T, tc hostileCase) answer {
	t.Helper()
	g := NewWithT(t)
	tn := r.newTenant(t, tc)
	start := time.Now()
	if tc.commit != nil {
		_, err := tn.repo.CommitFiles("main", "hostile", tc.commit...)
		g.Expect(err).NotTo(HaveOccurred())
	}
	if tc.attack != nil {
		tc.attack(g, r, tn)
	}
	stalled := r.expectStalled(g, tc, tn)
	out := answer{name: tc.name, reason: stalled.Reason, message: stalled.Message, retried: tc.retried, took: time.Since(start)}
	out.peakRSS = r.expectControllerAlive(g)
	r.expectNothingPruned(g, tn)
	if tc.verify != nil {
		tc.verify(g, r)
	}
	for _, ref := range tc.absent {
		ns := strings.ReplaceAll(ref.namespace, "$NS", tn.ns)
		g.Expect(kubetest.Exists(g, r.c, kubetest.Object(ref.apiVersion, ref.kind, ns, ref.name, nil))).
			To(BeFalse(), "%s %s/%s was created", ref.kind, ns, ref.name)
	}
	_, err := os.Stat(r.marker)
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "an exec plugin ran in the controller")
	r.expectHealthyProgress(g, tc.name)
	return out
}

// expectStalled waits up to tc.within for Stalled=True with tc's reason and message, and
// Ready=False, on the tenant's Package or GitSource (only Ready=False when tc.retried); it
// returns the condition holding the message.
func (r *run) expectStalled(g Gomega, tc hostileCase, tn *tenant) metav1.Condition {
	vars := strings.NewReplacer("$NS", tn.ns, "$HEALTHY", r.healthy.ns)
	var stalled metav1.Condition
	g.Eventually(func(g Gomega) {
		conds := r.conditions(g, tc, tn)
		ready := conditionOf(conds, convoyv1alpha1.ReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse), "Ready")
		g.Expect(ready.Reason).To(Equal(tc.reason))
		stalled = conditionOf(conds, convoyv1alpha1.StalledCondition)
		if tc.retried {
			g.Expect(stalled.Status).NotTo(Equal(metav1.ConditionTrue), "Stalled")
			stalled = ready
		} else {
			g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue), "Stalled")
			g.Expect(stalled.Reason).To(Equal(tc.reason))
		}
		for _, part := range tc.message {
			g.Expect(stalled.Message).To(ContainSubstring(vars.Replace(part)))
		}
	}).WithTimeout(tc.within).WithPolling(100*time.Millisecond).Should(Succeed(), func() string {
		return "the conditions: " + r.describeConditions(tc, tn)
	})
	return stalled
}

// conditions reads the conditions of the object tc watches.
func (r *run) conditions(g Gomega, tc hostileCase, tn *tenant) []metav1.Condition {
	conds, err := r.readConditions(tc, tn)
	g.Expect(err).NotTo(HaveOccurred())
	return conds
}

// readConditions reads the conditions of the tenant's GitSource or Package, as tc says.
func (r *run) readConditions(tc hostileCase, tn *tenant) ([]metav1.Condition, error) {
	if tc.onGitSource {
		gs := &convoyv1alpha1.GitSource{}
		err := r.c.Get(r.ctx, client.ObjectKey{Namespace: tn.ns, Name: gitSourceName}, gs)
		return gs.Status.Conditions, err
	}
	pkg := &convoyv1alpha1.Package{}
	err := r.c.Get(r.ctx, tn.pkg, pkg)
	return pkg.Status.Conditions, err
}

// describeConditions returns the conditions of the object tc watches, for a failure message.
func (r *run) describeConditions(tc hostileCase, tn *tenant) string {
	conds, err := r.readConditions(tc, tn)
	if err != nil {
		return err.Error()
	}
	raw, _ := json.MarshalIndent(conds, "", "  ")
	return string(raw)
}

// expectControllerAlive checks that the controller is the process started for the run, still
// running, and that its peak RSS is under the bound; it returns the peak.
func (r *run) expectControllerAlive(g Gomega) int64 {
	g.Expect(r.ctrl.Exited()).To(BeFalse(), "the controller exited (see %s)", r.ctrl.LogPath())
	g.Expect(r.ctrl.PID()).To(Equal(r.pid), "the controller was restarted")
	usage, err := r.ctrl.Usage()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(usage.PeakRSS).To(BeNumerically("<", peakRSSBound), "the controller's peak RSS")
	return usage.PeakRSS
}

// expectNothingPruned checks that the objects of the tenant's good revision still exist.
func (r *run) expectNothingPruned(g Gomega, tn *tenant) {
	g.Expect(kubetest.Exists(g, r.c, kubetest.ConfigMap(tn.ns, keptName, nil))).To(BeTrue(), "the good revision was pruned")
	if tn.hosted {
		g.Expect(kubetest.Exists(g, r.hosted.Client, kubetest.ConfigMap("default", hostedKeptName(tn), nil))).
			To(BeTrue(), "the good revision was pruned from the hosted cluster")
	}
}

// expectHealthyProgress commits a new revision for the healthy tenant and waits until its
// Package is Available at it.
func (r *run) expectHealthyProgress(g Gomega, after string) {
	r.healthyRevision++
	commit, err := r.healthy.repo.Commit("main", "after "+after, map[string]string{
		packagePath + "/kept.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, annotations: {convoy.dev/phase: deploy}}\ndata: {v: %q}\n",
			keptName, fmt.Sprint(r.healthyRevision)),
	})
	g.Expect(err).NotTo(HaveOccurred())
	r.expectAvailableAt(g, r.healthy.pkg, commit, progressBound)
}

// expectNoLeak greps every status, every event and the controller's whole log for the
// planted credential, and the log for a panic.
func (r *run) expectNoLeak(g Gomega) {
	surfaces := map[string]any{}
	pkgs := &convoyv1alpha1.PackageList{}
	g.Expect(r.c.List(r.ctx, pkgs)).To(Succeed())
	for _, p := range pkgs.Items {
		surfaces["status of Package "+p.Namespace+"/"+p.Name] = p.Status
	}
	sources := &convoyv1alpha1.GitSourceList{}
	g.Expect(r.c.List(r.ctx, sources)).To(Succeed())
	// Note: a GitSource's spec.url is the user's own text; its status is convoy's.
	for _, gs := range sources.Items {
		surfaces["status of GitSource "+gs.Namespace+"/"+gs.Name] = gs.Status
	}
	rollouts := &convoyv1alpha1.HostedClusterPackageList{}
	g.Expect(r.c.List(r.ctx, rollouts)).To(Succeed())
	for _, o := range rollouts.Items {
		surfaces["status of HostedClusterPackage "+o.Name] = o.Status
	}
	events := &eventsv1.EventList{}
	g.Expect(r.c.List(r.ctx, events)).To(Succeed())
	surfaces["events"] = events.Items
	log, err := os.ReadFile(r.ctrl.LogPath())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(log)).To(ContainSubstring("Starting"), "the controller's log was captured")
	g.Expect(string(log)).NotTo(ContainSubstring("panic"), "the controller's log shows a panic (a reconciler's panic is recovered: no crash, but a bug)")
	for name, v := range surfaces {
		raw, err := json.Marshal(v)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(raw)).NotTo(ContainSubstring(planted), "the %s holds the planted credential", name)
	}
	g.Expect(string(log)).NotTo(ContainSubstring(planted), "the controller's log holds the planted credential")
}

// markdownEscape keeps a message's text as it is in a Markdown table cell.
var markdownEscape = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;")

// markdownTable renders the answers as the hostile-input table of docs/evidence/reliability.md.
func markdownTable(answers []answer) string {
	var b strings.Builder
	b.WriteString("| Input tried | What convoy answers | Time to answer | Controller peak RSS |\n|---|---|---|---|\n")
	for _, a := range answers {
		message, _, cut := strings.Cut(a.message, "\n")
		if cut {
			message += " …"
		}
		condition := "`Stalled`, `" + a.reason + "`"
		switch {
		case a.condition != "":
			condition = a.condition
		case a.retried:
			condition = "`Ready=False`, `" + a.reason + "`, retried"
		}
		fmt.Fprintf(&b, "| %s | %s: %s | %.2f s | %d MiB |\n", a.name, condition,
			markdownEscape.Replace(message), a.took.Seconds(), a.peakRSS>>20)
	}
	return b.String()
}
