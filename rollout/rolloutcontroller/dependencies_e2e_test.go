package rolloutcontroller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// depAddons are the add-ons of TestDependenciesAcrossTheFleet, each a package directory of
// the same repository and a HostedClusterPackage "<fleet>-<add-on>", with what each depends
// on: crds ← certs ← webhook is a chain of depth three, and app needs certs and monitoring,
// which both need crds (a diamond). crds installs a CRD inside the hosted cluster and certs a
// custom resource of it, so that certs applied first would fail.
var depAddons = []struct {
	name  string
	needs []string
}{
	{"crds", nil}, {"certs", []string{"crds"}}, {"webhook", []string{"certs"}},
	{"monitoring", []string{"crds"}}, {"app", []string{"certs", "monitoring"}},
}

// addonLabel marks the ConfigMap whose probe says whether an add-on is available.
const addonLabel = "test.convoy.dev/addon"

// depPackages returns the files of commit n: one directory per add-on, each with a hosted
// ConfigMap "<add-on>-<n>" that its probe requires to be opened (readyAnnotation) when the
// add-on is in gated, two ungated add-ons, solo-a and solo-b, and two Package Operator
// packages. at, when it names an add-on, replaces its n and gated, so that a commit can leave
// an add-on's directory as it was.
func depPackages(n int, gated map[string]bool, at ...addonAt) map[string]string {
	files := map[string]string{}
	for _, a := range depAddons {
		addonFiles(files, a.name, n, gated[a.name])
	}
	for _, a := range at {
		addonFiles(files, a.name, a.n, a.gated)
	}
	addonFiles(files, "solo-a", n, false)
	addonFiles(files, "solo-b", n, false)
	pkoUserFiles(files, "pko-user", "solo-b.addons")
	pkoUserFiles(files, "pko-orphan", "nobody.addons")
	files["crds/crd.yaml"] = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.deps.test.convoy.dev
  annotations: {convoy.dev/phase: hosted, convoy.dev/prune: enabled}
spec:
  group: deps.test.convoy.dev
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`
	files["certs/widget.yaml"] = `apiVersion: deps.test.convoy.dev/v1
kind: Widget
metadata:
  name: issuer
  namespace: default
  annotations: {convoy.dev/phase: hosted}
spec: {size: 1}
`
	return files
}

// addonAt is an add-on's directory as of commit n.
type addonAt struct {
	name  string
	n     int
	gated bool
}

// addonFiles adds the manifest and ConfigMap of add-on name at commit n to files.
func addonFiles(files map[string]string, name string, n int, gated bool) {
	files[name+"/manifest.yaml"] = fmt.Sprintf(`apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: %[1]s}
spec:
  phases:
  - {name: hosted, class: hosted-cluster}
  availabilityProbes:
  - selector: {kind: {kind: ConfigMap}, selector: {matchLabels: {%[2]s: %[1]s}}}
    probes:
    - cel:
        rule: "self.data.gated == 'false' || (has(self.metadata.annotations) && '%[3]s' in self.metadata.annotations)"
        message: the gate is closed
`, name, addonLabel, readyAnnotation)
	files[name+"/objects.yaml"] = fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %[1]s-%[2]d
  namespace: default
  labels: {%[3]s: %[1]s}
  annotations: {convoy.dev/phase: hosted}
data: {gated: "%[4]t"}
`, name, n, addonLabel, gated)
}

// pkoUserFiles adds a Package Operator package name, the same at every commit, with a
// management-side ConfigMap, whose spec.dependencies names the package dependency.
func pkoUserFiles(files map[string]string, name, dependency string) {
	files[name+"/manifest.yaml"] = fmt.Sprintf(`apiVersion: manifests.package-operator.run/v1alpha1
kind: PackageManifest
metadata: {name: %s}
spec:
  scopes: [Namespaced]
  phases: [{name: deploy}]
  dependencies:
  - image: {name: base, package: %s, range: '>=1.0.0'}
`, name, dependency)
	files[name+"/cm.yaml"] = fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  annotations: {package-operator.run/phase: deploy}
`, name)
}

// depFleet is the state of TestDependenciesAcrossTheFleet.
type depFleet struct {
	*rolloutFleet
	// opened records when the test opened each add-on's gate on each cluster, by
	// "<add-on>/<cluster>".
	opened map[string]time.Time
}

// TestDependenciesAcrossTheFleet rolls five dependent add-ons out to new HostedClusters through
// real Git, Package and hosted API servers: each cluster gets each add-on only once what it
// needs is available there, with no failed apply; an upgrade of the root that breaks on one
// cluster holds its dependants there only, without a failure; a deleted cluster loses its
// Packages dependants first; a cycle and a missing dependency say so and apply nothing.
func TestDependenciesAcrossTheFleet(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	f := &depFleet{rolloutFleet: &rolloutFleet{t: t, name: "deps-" + fleet.NameSuffix(), ns: env.NewNamespace(t),
		clusters: map[string]*fleet.HostedCluster{}}, opened: map[string]time.Time{}}
	f.repo = newSource(t, f.ns)
	all := map[string]bool{"crds": true, "certs": true, "webhook": true, "monitoring": true, "app": true}
	c1 := f.push(1, all)
	f.addClusters("h1:early", "h2:early")
	for _, a := range depAddons {
		f.newAddon(a.name, a.name, a.needs...)
	}

	f.expectInstalled(g, map[string][]string{"crds": {"h1", "h2"}}, c1)
	f.expectWaiting(g, "certs", "crds", "h1", "h2")
	f.expectWaiting(g, "app", "certs", "h1", "h2")

	f.openAddon(g, "crds", "h1", 1)
	f.expectInstalled(g, map[string][]string{"crds": {"h1", "h2"}, "certs": {"h1"}, "monitoring": {"h1"}}, c1)
	f.openAddon(g, "crds", "h2", 1)
	f.expectInstalled(g, map[string][]string{"crds": {"h1", "h2"}, "certs": {"h1", "h2"}, "monitoring": {"h1", "h2"}}, c1)
	f.openAddon(g, "certs", "h1", 1)
	f.openAddon(g, "certs", "h2", 1)
	f.expectInstalled(g, map[string][]string{"crds": {"h1", "h2"}, "certs": {"h1", "h2"}, "monitoring": {"h1", "h2"},
		"webhook": {"h1", "h2"}}, c1)
	f.expectWaiting(g, "app", "monitoring", "h1", "h2")
	f.openAddon(g, "monitoring", "h1", 1)
	f.openAddon(g, "monitoring", "h2", 1)
	for _, a := range []string{"webhook", "app"} {
		f.waitForPackages(g, a, "h1", "h2")
		f.openAddon(g, a, "h1", 1)
		f.openAddon(g, a, "h2", 1)
	}
	for _, a := range depAddons {
		f.expectReady(g, a.name)
	}
	f.expectInstallOrder(g, 1)
	f.expectNoFailedApply(g)

	t.Run("a root upgrade broken on one cluster holds its dependants there only", func(t *testing.T) { f.testBrokenRoot(t) })
	t.Run("a cycle and a missing dependency", func(t *testing.T) { f.testBadGraphs(t) })
	t.Run("Package Operator dependencies map to HostedClusterPackages", func(t *testing.T) { f.testPKODependencies(t) })
	t.Run("a deleted cluster loses dependants first", func(t *testing.T) { f.testTeardown(t) })
}

// push commits depPackages(n, gated, at...) and returns its hash.
func (f *depFleet) push(n int, gated map[string]bool, at ...addonAt) string {
	f.t.Helper()
	c, err := f.repo.Commit("main", fmt.Sprintf("commit %d", n), depPackages(n, gated, at...))
	NewWithT(f.t).Expect(err).NotTo(HaveOccurred())
	return c
}

// hcpkg names the HostedClusterPackage of add-on a.
func (f *depFleet) hcpkg(a string) string { return f.name + "-" + a }

// newAddon creates the HostedClusterPackage of add-on name from directory path, selecting the
// test's clusters, all at once ("100%"), with a progress deadline of 5 s, depending on needs.
func (f *depFleet) newAddon(name, path string, needs ...string) {
	f.t.Helper()
	all, deadline := intstr.FromString("100%"), int32(5)
	newHostedClusterPackage(f.t, f.hcpkg(name), f.ns, func(o *convoyv1alpha1.HostedClusterPackage) {
		o.Spec.HostedClusterSelector.MatchLabels["test.convoy.dev/fleet"] = f.name
		o.Spec.Template.Spec.Path = path
		o.Spec.Strategy.RollingUpgrade.MaxUnavailable = &all
		o.Spec.Strategy.RollingUpgrade.ProgressDeadlineSeconds = &deadline
		for _, n := range needs {
			o.Spec.DependsOn = append(o.Spec.DependsOn, convoyv1alpha1.PackageDependency{Name: f.hcpkg(n)})
		}
	})
}

// expectInstalled waits until exactly the given add-ons have Packages, pinned to commit, on
// exactly the given clusters, and checks that no other add-on gets one for two seconds.
func (f *depFleet) expectInstalled(g *WithT, want map[string][]string, commit string) {
	f.t.Helper()
	installed := func(g Gomega) {
		for _, a := range depAddons {
			pkgs := packagesOf(g, f.hcpkg(a.name))
			g.Expect(onCommit(pkgs, commit)).To(ConsistOf(want[a.name]), a.name)
			g.Expect(pkgs).To(HaveLen(len(want[a.name])), a.name)
		}
	}
	g.Eventually(installed).Should(Succeed())
	g.Consistently(installed, 2*time.Second).Should(Succeed())
}

// waitForPackages waits until add-on a has a Package on each cluster.
func (f *depFleet) waitForPackages(g *WithT, a string, clusters ...string) {
	g.Eventually(func(g Gomega) {
		for _, hc := range clusters {
			g.Expect(packagesOf(g, f.hcpkg(a))).To(HaveKey(hc))
		}
	}).Should(Succeed())
}

// expectWaiting waits until add-on a reports that it waits for dependency on the clusters,
// and says so in its Ready condition.
func (f *depFleet) expectWaiting(g Gomega, a, dependency string, clusters ...string) {
	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, f.hcpkg(a)).Status
		g.Expect(st.WaitingPackages).To(BeEquivalentTo(len(clusters)))
		var on []string
		for _, w := range st.Waiting {
			g.Expect(w.Reason).To(Equal(convoyv1alpha1.DependencyNotReadyReason))
			g.Expect(w.Dependency).To(Equal(f.hcpkg(dependency)))
			g.Expect(w.Message).To(ContainSubstring("waits for HostedClusterPackage %s on HostedCluster %s",
				f.hcpkg(dependency), w.HostedCluster))
			on = append(on, strings.TrimPrefix(w.HostedCluster, "clusters/"))
		}
		g.Expect(on).To(ConsistOf(clusters))
		ready := apimeta.FindStatusCondition(st.Conditions, convoyv1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect([]string{string(ready.Status), ready.Reason}).To(Equal([]string{"False", convoyv1alpha1.DependencyNotReadyReason}))
		g.Expect(ready.Message).To(ContainSubstring("waits for HostedClusterPackage " + f.hcpkg(dependency)))
		g.Expect(st.FailedPackages).To(BeZero())
	}).Should(Succeed())
}

// openAddon opens the gate of add-on a's ConfigMap of commit n on cluster hc.
func (f *depFleet) openAddon(g *WithT, a, hc string, n int) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-%d", a, n)}}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, readyAnnotation)
	g.Eventually(func() error {
		return f.clusters[hc].Client.Patch(context.Background(), cm, client.RawPatch("application/merge-patch+json", []byte(patch)))
	}).Should(Succeed())
	f.opened[a+"/"+hc] = time.Now()
}

// expectReady waits until add-on a's rollout completed.
func (f *depFleet) expectReady(g *WithT, a string) {
	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, f.hcpkg(a)).Status
		ready := apimeta.FindStatusCondition(st.Conditions, convoyv1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(st.WaitingPackages).To(BeZero())
	}).Should(Succeed())
}

// expectInstallOrder checks, on each cluster, that every add-on's objects of commit n were
// created no earlier than those of what it needs, and its Package no earlier than the
// test opened the gates of what it needs there.
func (f *depFleet) expectInstallOrder(g *WithT, n int) {
	ctx := context.Background()
	for name, hc := range f.clusters {
		created := map[string]time.Time{}
		for _, a := range depAddons {
			cm := &corev1.ConfigMap{}
			g.Expect(hc.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: fmt.Sprintf("%s-%d", a.name, n)}, cm)).To(Succeed())
			created[a.name] = cm.CreationTimestamp.Time
		}
		for _, a := range depAddons {
			pkg := packagesOf(g, f.hcpkg(a.name))[name]
			for _, need := range a.needs {
				g.Expect(created[a.name]).NotTo(BeTemporally("<", created[need]), "%s before %s on %s", a.name, need, name)
				g.Expect(pkg.CreationTimestamp.Time).NotTo(BeTemporally("<", f.opened[need+"/"+name].Truncate(time.Second)),
					"Package of %s created before %s was available on %s", a.name, need, name)
			}
		}
	}
}

// expectNoFailedApply checks that no Package of the test reported a failed apply.
func (f *depFleet) expectNoFailedApply(g *WithT) {
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(context.Background(), list)).To(Succeed())
	for _, e := range list.Items {
		if e.Regarding.Kind == "Package" && strings.HasPrefix(e.Regarding.Name, f.name) {
			g.Expect(e.Reason).NotTo(Equal(convoyv1alpha1.ApplyFailedReason), e.Note)
		}
	}
}

// testBrokenRoot upgrades crds to a commit that stays gated on h2, then the other add-ons: crds
// fails on h2, its dependants (certs, monitoring) move on h1 and wait on h2 without a
// failure, past their own progress deadline; webhook and app, which need only certs and
// monitoring available, move everywhere. Once crds is opened on h2, everything completes.
//
// Note: the other add-ons' commit comes once crds's upgrade started on h2. Were both in one
// commit, a dependant's pass could come first and find crds still available at its old commit:
// it would move, as its dependsOn asks only for an available crds (a minCommit asks more).
func (f *depFleet) testBrokenRoot(t *testing.T) {
	g := NewWithT(t)
	gatedAt1 := []addonAt{{"certs", 1, true}, {"webhook", 1, true}, {"monitoring", 1, true}, {"app", 1, true},
		{"solo-a", 1, false}, {"solo-b", 1, false}}
	root := f.push(2, map[string]bool{"crds": true}, gatedAt1...)
	g.Eventually(func(g Gomega) {
		g.Expect(onCommit(packagesOf(g, f.hcpkg("crds")), root)).To(ConsistOf("h1", "h2"))
	}).Should(Succeed())
	f.openAddon(g, "crds", "h1", 2)
	c2 := f.push(2, map[string]bool{"crds": true})
	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, f.hcpkg("crds")).Status
		g.Expect(st.FailedPackages).To(BeEquivalentTo(1))
		g.Expect(st.Failures).To(ConsistOf(HaveField("HostedCluster", "clusters/h2")))
	}).Should(Succeed())
	held := func(g Gomega) {
		for _, a := range []string{"certs", "monitoring"} {
			pkgs := packagesOf(g, f.hcpkg(a))
			g.Expect(pkgs["h1"].Spec.Revision).To(Equal(c2), a)
			g.Expect(pkgs["h2"].Spec.Revision).NotTo(Equal(c2), a)
			st := getHCPkg(g, f.hcpkg(a)).Status
			g.Expect(st.FailedPackages).To(BeZero(), a)
			g.Expect(st.Conditions).NotTo(ContainElement(And(HaveField("Type", convoyv1alpha1.StalledCondition),
				HaveField("Status", metav1.ConditionTrue))), a)
		}
	}
	g.Eventually(held).Should(Succeed())
	for _, a := range depAddons[1:] {
		g.Eventually(func(g Gomega) {
			g.Expect(packagesOf(g, f.hcpkg(a.name))["h1"]).To(HaveField("Status.Revision", c2), a.name)
		}).Should(Succeed())
	}
	f.expectWaiting(g, "certs", "crds", "h2")
	f.expectWaiting(g, "monitoring", "crds", "h2")
	g.Consistently(held, 8*time.Second).Should(Succeed())

	f.openAddon(g, "crds", "h2", 2)
	for _, a := range depAddons {
		f.expectReady(g, a.name)
		want := map[bool]string{true: root, false: c2}[a.name == "crds"]
		g.Expect(onCommit(packagesOf(g, f.hcpkg(a.name)), want)).To(ConsistOf("h1", "h2"), a.name)
	}
	f.expectNoFailedApply(g)
}

// testBadGraphs creates two HostedClusterPackages that depend on each other and one that
// depends on a HostedClusterPackage that does not exist yet: neither applies anything, the
// cycle stalls naming its members, the missing dependency waits and starts once it appears.
func (f *depFleet) testBadGraphs(t *testing.T) {
	g := NewWithT(t)
	f.newAddon("loop-x", "solo-a", "loop-y")
	f.newAddon("loop-y", "solo-a", "loop-x")
	f.newAddon("late", "solo-b", "early")
	for _, name := range []string{"loop-x", "loop-y"} {
		other := map[string]string{"loop-x": "loop-y", "loop-y": "loop-x"}[name]
		g.Eventually(func(g Gomega) {
			g.Expect(getHCPkg(g, f.hcpkg(name)).Status.Conditions).To(haveCondition(convoyv1alpha1.StalledCondition,
				metav1.ConditionTrue, convoyv1alpha1.DependencyCycleReason, fmt.Sprintf(
					"spec.dependsOn forms a cycle: %s → %s → %s; nothing is applied until it is broken",
					f.hcpkg(name), f.hcpkg(other), f.hcpkg(name))))
		}).Should(Succeed())
	}
	g.Eventually(func(g Gomega) {
		ready := apimeta.FindStatusCondition(getHCPkg(g, f.hcpkg("late")).Status.Conditions, convoyv1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(convoyv1alpha1.DependencyNotReadyReason))
		g.Expect(ready.Message).To(ContainSubstring("no HostedClusterPackage %s exists", f.hcpkg("early")))
	}).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, name := range []string{"loop-x", "loop-y", "late"} {
			g.Expect(packagesOf(g, f.hcpkg(name))).To(BeEmpty(), name)
		}
	}, 2*time.Second).Should(Succeed())

	f.newAddon("early", "solo-a")
	f.waitForPackages(g, "late", "h1", "h2")
	f.expectReady(g, "late")
	g.Expect(packagesOf(g, f.hcpkg("loop-x"))).To(BeEmpty())
}

// testTeardown deletes h1 and samples its Packages until they are gone: at no time does a
// Package go, or start going, while a dependant still has one there.
func (f *depFleet) testTeardown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hc := f.clusters["h1"]
	g.Expect(env.BeginDeletion(ctx, hc)).To(Succeed())
	g.Expect(env.FinishDeletion(ctx, hc)).To(Succeed())
	deadline := time.Now().Add(90 * time.Second)
	for {
		present := map[string]*convoyv1alpha1.Package{}
		for _, a := range depAddons {
			if pkg, ok := packagesOf(g, f.hcpkg(a.name))["h1"]; ok {
				present[a.name] = pkg
			}
		}
		for _, a := range depAddons {
			if present[a.name] == nil {
				continue
			}
			for _, need := range a.needs {
				g.Expect(present[need]).NotTo(BeNil(), "%s gone from h1 before %s", need, a.name)
				g.Expect(present[need].DeletionTimestamp).To(BeNil(), "%s deleted from h1 before %s", need, a.name)
			}
		}
		if len(present) == 0 {
			break
		}
		g.Expect(time.Now().Before(deadline)).To(BeTrue(), "Packages left on h1: %v", present)
		time.Sleep(50 * time.Millisecond)
	}
	for _, a := range depAddons {
		g.Expect(packagesOf(g, f.hcpkg(a.name))).To(ConsistOf(HaveField("Namespace", HaveSuffix("h2"))), a.name)
	}
}

// testPKODependencies rolls out two Package Operator packages whose spec.dependencies name
// packages: solo-b, which HostedClusterPackage "late" rolls out (testBadGraphs), maps to it;
// nobody, which none rolls out, holds every cluster and says so.
func (f *depFleet) testPKODependencies(t *testing.T) {
	g := NewWithT(t)
	f.newAddon("pko-user", "pko-user")
	f.newAddon("pko-orphan", "pko-orphan")
	g.Eventually(func(g Gomega) {
		st := getHCPkg(g, f.hcpkg("pko-user")).Status
		g.Expect(st.PackageName).To(Equal("pko-user"))
		g.Expect(st.Dependencies).To(Equal([]string{f.hcpkg("late")}))
		g.Expect(getHCPkg(g, f.hcpkg("late")).Status.PackageName).To(Equal("solo-b"))
	}).Should(Succeed())
	f.expectReady(g, "pko-user")
	pkg := packagesOf(g, f.hcpkg("pko-user"))["h2"]
	g.Expect(pkg.Status.Warnings).To(ContainElement(ContainSubstring(
		`the HostedClusterPackage rolling out package "solo-b" is available there; the range ">=1.0.0"`)))

	g.Eventually(func(g Gomega) {
		ready := apimeta.FindStatusCondition(getHCPkg(g, f.hcpkg("pko-orphan")).Status.Conditions, convoyv1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(convoyv1alpha1.DependencyNotReadyReason))
		g.Expect(ready.Message).To(ContainSubstring("names package nobody, which no HostedClusterPackage rolls out"))
	}).Should(Succeed())
	g.Expect(packagesOf(g, f.hcpkg("pko-orphan"))).To(BeEmpty())
}
