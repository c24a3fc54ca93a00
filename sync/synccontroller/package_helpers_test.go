package synccontroller

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// gitSourceName is the GitSource every Package test creates in its namespace.
const gitSourceName = "addons"

// newGitSource creates a Git repository and a GitSource following its main branch, polled
// every second, in namespace ns.
func newGitSource(t *testing.T, ns string) *gitserver.Repo {
	t.Helper()
	g := NewWithT(t)
	srv, err := gitserver.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(srv.Close)
	repo, err := srv.CreateRepo("addons")
	g.Expect(err).NotTo(HaveOccurred())
	gs := &convoyv1alpha1.GitSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gitSourceName},
		Spec: convoyv1alpha1.GitSourceSpec{URL: srv.FileURL("addons"), Ref: convoyv1alpha1.GitRef{Branch: "main"},
			Interval: &metav1.Duration{Duration: time.Second}},
	}
	g.Expect(env.Client.Create(context.Background(), gs)).To(Succeed())
	return repo
}

// newPackage creates a Package of path in ns, following the GitSource of ns.
func newPackage(t *testing.T, ns, name, path string, mutate ...func(*convoyv1alpha1.Package)) client.ObjectKey {
	t.Helper()
	pkg := &convoyv1alpha1.Package{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: convoyv1alpha1.PackageTemplateSpec{
			SourceRef: convoyv1alpha1.SourceReference{Name: gitSourceName}, Path: path,
		}},
	}
	for _, m := range mutate {
		m(pkg)
	}
	NewWithT(t).Expect(env.Client.Create(context.Background(), pkg)).To(Succeed())
	return client.ObjectKeyFromObject(pkg)
}

// getPackage reads a Package.
func getPackage(g Gomega, key client.ObjectKey) *convoyv1alpha1.Package {
	pkg := &convoyv1alpha1.Package{}
	g.Expect(env.Client.Get(context.Background(), key, pkg)).To(Succeed())
	return pkg
}

// expectAvailableAt waits until the Package is Ready and Available at revision.
func expectAvailableAt(g Gomega, key client.ObjectKey, revision string) *convoyv1alpha1.Package {
	var pkg *convoyv1alpha1.Package
	g.Eventually(func(g Gomega) {
		pkg = getPackage(g, key)
		g.Expect(pkg.Status.Revision).To(Equal(revision))
		g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.ReadyCondition, metav1.ConditionTrue, ""))
		g.Expect(pkg.Status.Conditions).To(haveCondition(convoyv1alpha1.AvailableCondition, metav1.ConditionTrue, ""))
	}).Should(Succeed())
	return pkg
}

// expectGone waits until the Package no longer exists.
func expectGone(g Gomega, key client.ObjectKey, within time.Duration) {
	g.Eventually(func() bool {
		err := env.Client.Get(context.Background(), key, &convoyv1alpha1.Package{})
		return client.IgnoreNotFound(err) == nil && err != nil
	}).WithTimeout(within).Should(BeTrue())
}

// manifest returns a PackageManifest with phases "name" or "name:hosted-cluster" and the gate
// probe.
func manifest(phases ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: test}\nspec:\n  phases:\n")
	for _, p := range phases {
		name, class, _ := strings.Cut(p, ":")
		fmt.Fprintf(&b, "  - {name: %s, class: %q}\n", name, class)
	}
	b.WriteString(`  availabilityProbes:
  - selector: {kind: {kind: ConfigMap}, selector: {matchLabels: {test.convoy.dev/gate: "true"}}}
    probes:
    - cel: {rule: "has(self.metadata.annotations) && 'test.convoy.dev/ready' in self.metadata.annotations", message: "the gate is closed"}
`)
	return b.String()
}

// cmYAML returns a ConfigMap document of phase; namespace may be empty.
func cmYAML(phase, namespace, name, value string, extraLabels ...string) string {
	ns := ""
	if namespace != "" {
		ns = "\n  namespace: " + namespace
	}
	labels := ""
	if len(extraLabels) > 0 {
		labels = "\n  labels: {" + strings.Join(extraLabels, ", ") + "}"
	}
	return fmt.Sprintf("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s%s%s\n  annotations: {convoy.dev/phase: %s}\ndata: {v: %q}\n",
		name, ns, labels, phase, value)
}

// exampleFiles reads a package directory of the repository's examples/packages into a map
// for gitserver.Repo.Commit, under prefix.
func exampleFiles(t *testing.T, name, prefix string) map[string]string {
	t.Helper()
	files, err := gitserver.ReadTree(filepath.Join("..", "..", "examples", "packages", name), prefix)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return files
}

// finalizeNamespaces finishes the deletion of terminating namespaces of a hosted API server,
// which has no namespace controller.
func finalizeNamespaces(g Gomega, c client.Client, names ...string) {
	ctx := context.Background()
	for _, name := range names {
		ns := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			continue
		}
		if ns.DeletionTimestamp == nil {
			continue
		}
		ns.Spec.Finalizers = nil
		g.Expect(c.SubResource("finalize").Update(ctx, ns)).To(Succeed())
	}
}
