package synccontroller

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/procstat"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// hostileFiles reads a package of manifests/testdata/hostile for gitserver.Repo.Commit, under
// prefix.
func hostileFiles(t *testing.T, name, prefix string) map[string]string {
	t.Helper()
	files, err := gitserver.ReadTree(filepath.Join("..", "..", "manifests", "testdata", "hostile", name), prefix)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return files
}

// TestPackageStallsOnARunawayTemplate commits templates that would loop for days, allocate
// terabytes or recurse without end, an alias bomb, a quadratic probe and 400,000 tiny
// documents, next to a healthy package: each hostile Package stalls with a condition naming its
// file and the limit it hit, the healthy Package becomes available meanwhile, and the
// controller's memory stays bounded.
func TestPackageStallsOnAHostilePackage(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ns := fleet.NewNamespaceIn(t, env.Client)
	repo := newGitSource(t, ns)
	files := map[string]string{
		"healthy/manifest.yaml": manifest("one"),
		"healthy/objects.yaml":  cmYAML("one", "", "healthy", "1"),
	}
	const stopped = "configmap.yaml.gotmpl: limit: rendering was stopped: "
	want := map[string]string{
		"nested-range":    stopped + "it used more than 2s of CPU time (render CPU limit, --render-cpu-limit)",
		"string-doubling": stopped + "it needed more than 128 MiB of memory (render memory limit, --render-memory-limit)",
		"self-map":        stopped + "it recursed too deep (stack limit 32 MiB",
		"alias-bomb":      "laughs.yaml:2: limit: document expands to more than 4194304 bytes through YAML aliases",
		"quadratic-probe": "manifest.yaml:15: probe: spec.availabilityProbes[0].probes[0].cel.rule: Invalid value",
	}
	if raceEnabled {
		delete(want, "string-doubling") // see race_on_test.go
	}
	for name := range want {
		for p, content := range hostileFiles(t, name, name+"/") {
			files[p] = content
		}
	}
	files["tiny-docs/manifest.yaml"] = manifest("one")
	files["tiny-docs/tiny.yaml"] = strings.Repeat("a: 1\n---\n", 400_000)
	want["tiny-docs"] = "tiny.yaml:20001: limit: the package has more than 10000 documents; the rest was not read"
	commit, err := repo.Commit("main", "hostile", files)
	g.Expect(err).NotTo(HaveOccurred())

	start := time.Now()
	for name := range want {
		newPackage(t, ns, name, name)
	}
	healthy := newPackage(t, ns, "healthy", "healthy")
	expectAvailableAt(g, healthy, commit)
	t.Logf("healthy package available after %s", time.Since(start).Round(time.Millisecond))
	for name, message := range want {
		g.Eventually(func(g Gomega) {
			pkg := getPackage(g, client.ObjectKey{Namespace: ns, Name: name})
			g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.StalledCondition, metav1.ConditionTrue, message))
			g.Expect(conditionOf(pkg.Status.Conditions, convoyv1alpha1.ReadyCondition).Reason).To(Equal(convoyv1alpha1.RenderFailedReason))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		t.Logf("%s stalled after %s", name, time.Since(start).Round(time.Millisecond))
	}
	peak, err := procstat.PeakRSS(procstat.Self)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(peak).To(BeNumerically("<", 1<<30), "the controller's peak RSS")
	t.Logf("test process peak RSS %d MiB", peak>>20)
}

// TestPackageWithAThousandProblemsStalls commits a package with 1,000 broken objects: the status
// patch must succeed, with a condition message that lists the first problems and counts the
// rest (the full list would exceed the API's 32 KiB bound on a condition message).
func TestPackageWithAThousandProblemsStalls(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ns := fleet.NewNamespaceIn(t, env.Client)
	repo := newGitSource(t, ns)
	var objects strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&objects, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%04d}\n", i)
	}
	commit, err := repo.Commit("main", "broken", map[string]string{
		"pkg/manifest.yaml": manifest("one"),
		"pkg/objects.yaml":  objects.String(),
	})
	g.Expect(err).NotTo(HaveOccurred())
	key := newPackage(t, ns, "broken", "pkg")
	g.Eventually(func(g Gomega) {
		pkg := getPackage(g, key)
		g.Expect(pkg.Status.LastAttemptedRevision).To(Equal(commit))
		g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.StalledCondition, metav1.ConditionTrue,
			"objects.yaml:4: missing-phase: ConfigMap \"cm-0000\" has no phase"))
		stalled := conditionOf(pkg.Status.Conditions, convoyv1alpha1.StalledCondition)
		g.Expect(stalled.Message).To(HaveSuffix("\n… and 980 more problems"))
		g.Expect(len(stalled.Message)).To(BeNumerically("<", 8<<10))
	}).Should(Succeed())
}

// TestPackageRefusesASymlinkLeavingItsDirectory commits a package whose objects file is a
// symlink to a file of another directory of the same repository: the Package stalls, as
// `convoy render` refuses it, and applies nothing.
func TestPackageRefusesASymlinkLeavingItsDirectory(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ns := fleet.NewNamespaceIn(t, env.Client)
	repo := newGitSource(t, ns)
	commit, err := repo.CommitFiles("main", "escape",
		gitserver.File{Path: "pkg/manifest.yaml", Content: manifest("one")},
		gitserver.File{Path: "pkg/objects.yaml", Content: "../other/objects.yaml", Symlink: true},
		gitserver.File{Path: "other/objects.yaml", Content: cmYAML("one", "", "borrowed", "1")})
	g.Expect(err).NotTo(HaveOccurred())
	key := newPackage(t, ns, "escape", "pkg")
	g.Eventually(func(g Gomega) {
		pkg := getPackage(g, key)
		g.Expect(pkg.Status.LastAttemptedRevision).To(Equal(commit))
		g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.StalledCondition, metav1.ConditionTrue,
			"objects.yaml: symlink-outside-package: symlink objects.yaml -> ../other/objects.yaml leads outside the package directory"))
	}).Should(Succeed())
	g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(ns, "borrowed", nil))).To(BeFalse())
}
