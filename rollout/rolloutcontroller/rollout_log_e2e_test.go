package rolloutcontroller

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// TestRolloutLogTellsTheStory rolls two commits out to three HostedClusters, one per partition,
// then a commit whose Package misses its progress deadline, and reads the controllers' log at
// the default verbosity: the partitions in order, each Package's creation and updates, the
// failure with its reason, a few lines per Package, and nothing while the fleet is steady.
func TestRolloutLogTellsTheStory(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	f := &rolloutFleet{t: t, name: "logs-" + fleet.NameSuffix(), ns: env.NewNamespace(t), clusters: map[string]*fleet.HostedCluster{}}
	f.repo = newSource(t, f.ns)
	c1 := f.commit(1, true, false)
	clusters := prefixed(f.name, []string{"e", "n", "l"}, "")
	f.addClusters(clusters[0]+":early", clusters[1]+":normal", clusters[2]+":late")
	deadline := int32(4)
	newHostedClusterPackage(t, f.name, f.ns, func(o *convoyv1alpha1.HostedClusterPackage) {
		o.Spec.Strategy.RollingUpgrade.ProgressDeadlineSeconds = &deadline
	})
	rev1 := f.expectComplete(g, c1, 3)
	c2 := f.commit(2, true, false)
	rev2 := f.expectComplete(g, c2, 3)

	story := f.logged()
	pkgs := packagesOf(g, f.name)
	for i, partition := range []string{"early", "normal", "late"} {
		pkg := pkgs[clusters[i]].Namespace + "/" + f.name
		story = expectLogged(g, story, "Partition started", "partition", partition, "revision", rev1)
		story = expectLogged(g, story, "Created Package", "package", pkg, "partition", partition,
			"revision", rev1, "commit", c1, "reason", string(rollout.NewTargetReason))
		story = expectLogged(g, story, "Partition completed", "partition", partition, "revision", rev1)
	}
	story = expectLogged(g, story, "Rollout completed", "revision", rev1, "commit", c1)
	for i, partition := range []string{"early", "normal", "late"} {
		pkg := pkgs[clusters[i]].Namespace + "/" + f.name
		story = expectLogged(g, story, "Partition started", "partition", partition, "revision", rev2)
		story = expectLogged(g, story, "Updated Package", "package", pkg, "revision", rev2, "commit", c2,
			"previousRevision", rev1, "previousCommit", c1)
		story = expectLogged(g, story, "Partition completed", "partition", partition, "revision", rev2)
	}
	expectLogged(g, story, "Rollout completed", "revision", rev2, "commit", c2)
	g.Expect(f.logged()).To(HaveLen(20), "nothing but the story:\n%s", f.logText())

	t.Run("a steady fleet logs nothing", func(t *testing.T) { f.testQuietLog(t) })
	bad := f.commit(3, false, false)
	t.Run("a failed Package is logged once with its reason", func(t *testing.T) { f.testFailureLogged(t, clusters[0], c2, bad) })
	t.Run("the GitSource logs each new commit", func(t *testing.T) { f.testCommitsLogged(t, c1, c2, bad) })
	t.Log("the rollout's log:\n" + f.logText())
}

// testQuietLog runs passes that change nothing and checks that they log nothing.
func (f *rolloutFleet) testQuietLog(t *testing.T) {
	g := NewWithT(t)
	before := len(f.logged())
	f.touch(g, f.name+"-e")
	g.Consistently(func() []logLine { return f.logged()[before:] }).WithTimeout(2*time.Second).Should(BeEmpty(),
		"a steady fleet logs nothing:\n%s", f.logText())
}

// touch runs three passes that change nothing, by relabelling the early HostedCluster cluster.
func (f *rolloutFleet) touch(g *WithT, cluster string) {
	reconciles := reconcileCount(g)
	for i := range 3 {
		labels := map[string]string{riskKey: "early", "test.convoy.dev/fleet": f.name, "touch": itoa(int32(i))}
		g.Expect(env.SetLabels(context.Background(), f.clusters[cluster], labels)).To(Succeed())
		g.Eventually(func(g Gomega) float64 { return reconcileCount(g) }).Should(BeNumerically(">", reconciles))
		reconciles = reconcileCount(g)
	}
}

// testFailureLogged waits for the commit bad, whose probe never passes, to reach its first
// Package, which misses its deadline and stalls the rollout, each said once.
func (f *rolloutFleet) testFailureLogged(t *testing.T, first, previous, bad string) {
	g := NewWithT(t)
	before := len(f.logged())
	g.Eventually(func(g Gomega) {
		g.Expect(getHCPkg(g, f.name).Status.Conditions).To(haveConditionStatus(convoyv1alpha1.StalledCondition, metav1.ConditionTrue))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, f.name), bad)).To(Equal([]string{first}))
	}).WithTimeout(2 * time.Second).Should(Succeed())
	rev := getHCPkg(g, f.name).Status.UpdateRevision
	pkg := packagesOf(g, f.name)[first].Namespace + "/" + f.name
	all := f.logged()[before:]
	story := withoutPassStalled(all)
	g.Expect(len(all)-len(story)).To(BeNumerically("<=", 1), "the pass's stall line is said once:\n%s", f.logText())
	g.Expect(story).To(HaveLen(4), "the failure's story:\n%s", f.logText())
	story = expectLogged(g, story, "Partition started", "partition", "early", "revision", rev)
	story = expectLogged(g, story, "Updated Package", "package", pkg, "revision", rev, "commit", bad,
		"previousCommit", previous, "reason", string(rollout.WithinBudgetReason))
	story = expectLogged(g, story, "Package missed its progress deadline", "package", pkg, "revision", rev,
		"commit", bad, "reason", rollout.ProgressDeadlineExceededReason,
		"message", ContainSubstring("has not progressed at revision "+bad[:12]))
	expectLogged(g, story, "Rollout stalled", "revision", rev, "reason", convoyv1alpha1.RolloutBlockedReason)

	for _, n := range f.linesPerPackage() {
		g.Expect(n).To(BeNumerically("<=", 4), "lines per Package:\n%s", f.logText())
	}
	before = len(f.logged())
	f.touch(g, first)
	g.Consistently(func() []logLine { return f.logged()[before:] }).WithTimeout(2*time.Second).Should(BeEmpty(),
		"a stalled fleet says it once:\n%s", f.logText())
}

// passStalled is the line internal/pass logs, for any controller, when a pass first stalls for
// a reason; the passes that find the same stall log it at V(1).
const passStalled = "Reconciliation stalled"

// withoutPassStalled drops the passStalled lines: the story is told by the rollout's own lines,
// and "Rollout stalled" says the same stall with the rollout's words.
func withoutPassStalled(lines []logLine) []logLine {
	var out []logLine
	for _, line := range lines {
		if line.msg != passStalled {
			out = append(out, line)
		}
	}
	return out
}

// testCommitsLogged checks that the GitSource logged each commit once, in order.
func (f *rolloutFleet) testCommitsLogged(t *testing.T, commits ...string) {
	g := NewWithT(t)
	lines := logLines("GitSource", f.ns+"/"+sourceName)
	g.Expect(lines).To(HaveLen(len(commits)))
	previous := ""
	for i, line := range lines {
		commit := commits[i]
		g.Expect(line.msg).To(Equal("Fetched new commit"))
		g.Expect(line.keys).To(And(HaveKeyWithValue("commit", commit), HaveKeyWithValue("previousCommit", previous),
			HaveKeyWithValue("ref", "main")))
		previous = commit
	}
}

// logged returns the lines the HostedClusterPackage's controller logged about it.
func (f *rolloutFleet) logged() []logLine {
	return logLines("HostedClusterPackage", f.name)
}

// logText is the HostedClusterPackage's log, as written.
func (f *rolloutFleet) logText() string {
	var b strings.Builder
	for _, line := range f.logged() {
		b.WriteString(line.text + "\n")
	}
	return b.String()
}

// linesPerPackage counts the lines that name each Package.
func (f *rolloutFleet) linesPerPackage() map[string]int {
	out := map[string]int{}
	for _, line := range f.logged() {
		if pkg := line.keys["package"]; pkg != "" {
			out[pkg]++
		}
	}
	return out
}

// expectLogged finds the first line of story with message msg and checks its keys, given as
// pairs of a key and a value or matcher; it returns the lines after it.
func expectLogged(g Gomega, story []logLine, msg string, keysAndValues ...any) []logLine {
	for i, line := range story {
		if line.msg != msg {
			continue
		}
		for k := 0; k+1 < len(keysAndValues); k += 2 {
			g.ExpectWithOffset(1, line.keys).To(HaveKeyWithValue(keysAndValues[k], keysAndValues[k+1]), msg)
		}
		return story[i+1:]
	}
	g.ExpectWithOffset(1, story).To(ContainElement(HaveField("msg", msg)), "%q in order", msg)
	return nil
}
