package rolloutcontroller

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

const (
	// riskKey is HyperShift's partition label.
	riskKey = "hypershift.openshift.io/risk-group"
	// readyAnnotation opens the gate ConfigMap of a gated commit.
	readyAnnotation = "test.convoy.dev/ready"
	// sourceName is the GitSource of every test.
	sourceName = "addons"
)

// newSource creates a Git repository and a GitSource in ns following its main branch, polled
// every second.
func newSource(t *testing.T, ns string) *gitserver.Repo {
	t.Helper()
	repo, _ := newSourceWithURL(t, ns)
	return repo
}

// newSourceWithURL is newSource, with the repository's URL.
func newSourceWithURL(t *testing.T, ns string) (*gitserver.Repo, string) {
	t.Helper()
	g := NewWithT(t)
	srv, err := gitserver.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(srv.Close)
	repo, err := srv.CreateRepo(sourceName)
	g.Expect(err).NotTo(HaveOccurred())
	gs := &convoyv1alpha1.GitSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sourceName},
		Spec: convoyv1alpha1.GitSourceSpec{URL: srv.FileURL(sourceName), Ref: convoyv1alpha1.GitRef{Branch: "main"},
			Interval: &metav1.Duration{Duration: time.Second}},
	}
	g.Expect(env.Client.Create(context.Background(), gs)).To(Succeed())
	return repo, srv.FileURL(sourceName)
}

// gatePackage returns the files of package "pkg" for commit n: one hosted-cluster phase with a
// ConfigMap "gate-<n>" whose probe passes when it is healthy and, if gated, once the test
// annotates it with readyAnnotation.
func gatePackage(n int, healthy, gated bool) map[string]string {
	manifest := `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: gate}
spec:
  phases:
  - {name: hosted, class: hosted-cluster}
  availabilityProbes:
  - selector: {kind: {kind: ConfigMap}, selector: {matchLabels: {test.convoy.dev/gate: "true"}}}
    probes:
    - cel:
        rule: "self.data.healthy == 'true' && (self.data.gated == 'false' || (has(self.metadata.annotations) && '` + readyAnnotation + `' in self.metadata.annotations))"
        message: the gate is closed
`
	objects := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: gate-%d
  namespace: default
  labels: {test.convoy.dev/gate: "true"}
  annotations: {convoy.dev/phase: hosted}
data: {healthy: "%t", gated: "%t"}
`, n, healthy, gated)
	return map[string]string{"pkg/manifest.yaml": manifest, "pkg/objects.yaml": objects}
}

// openGate annotates the gate ConfigMap of commit n inside hc, as an operator would.
func openGate(g Gomega, hc *fleet.HostedCluster, n int) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("gate-%d", n)}}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, readyAnnotation)
	g.Eventually(func() error {
		return hc.Client.Patch(context.Background(), cm, client.RawPatch("application/merge-patch+json", []byte(patch)))
	}).Should(Succeed())
}

// newHostedClusterPackage creates a HostedClusterPackage of path "pkg" from the GitSource of
// ns, selecting HostedClusters labelled test.convoy.dev/fleet=name, partitioned early, normal,
// late, with maxUnavailable 1.
func newHostedClusterPackage(t *testing.T, name, ns string, mutate ...func(*convoyv1alpha1.HostedClusterPackage)) {
	t.Helper()
	one := intstr.FromInt32(1)
	obj := &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			HostedClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"test.convoy.dev/fleet": name}},
			Partition: &convoyv1alpha1.PartitionSpec{LabelKey: riskKey,
				Order: convoyv1alpha1.PartitionOrder{Static: []string{"early", "normal", "late"}}},
			Strategy: convoyv1alpha1.HostedClusterPackageStrategy{
				RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{MaxUnavailable: &one}},
			Template: convoyv1alpha1.PackageTemplate{
				Metadata: convoyv1alpha1.PackageTemplateMetadata{Labels: map[string]string{"team": "addons"}},
				Spec: convoyv1alpha1.PackageTemplateSpec{
					SourceRef: convoyv1alpha1.SourceReference{Namespace: ns, Name: sourceName}, Path: "pkg",
					Interval: &metav1.Duration{Duration: time.Minute}},
			},
		},
	}
	for _, m := range mutate {
		m(obj)
	}
	NewWithT(t).Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
}

// getHCPkg reads a HostedClusterPackage.
func getHCPkg(g Gomega, name string) *convoyv1alpha1.HostedClusterPackage {
	obj := &convoyv1alpha1.HostedClusterPackage{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: name}, obj)).To(Succeed())
	return obj
}

// packagesOf returns the Packages of a HostedClusterPackage by HostedCluster name (the
// clusters of the tests live in the "clusters" namespace).
func packagesOf(g Gomega, name string) map[string]*convoyv1alpha1.Package {
	list := &convoyv1alpha1.PackageList{}
	g.Expect(env.Client.List(context.Background(), list,
		client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: name})).To(Succeed())
	out := map[string]*convoyv1alpha1.Package{}
	prefix := simfleet.DefaultHostedClusterNamespace + "-"
	for i := range list.Items {
		out[list.Items[i].Namespace[len(prefix):]] = &list.Items[i]
	}
	return out
}

// onCommit returns the sorted names of the clusters whose Package is pinned to commit.
func onCommit(pkgs map[string]*convoyv1alpha1.Package, commit string) []string {
	var out []string
	for hc, p := range pkgs {
		if p.Spec.Revision == commit {
			out = append(out, hc)
		}
	}
	slices.Sort(out)
	return out
}

// haveCondition matches a condition list holding type t with status s, reason and message.
func haveCondition(t string, s metav1.ConditionStatus, reason, message string) types.GomegaMatcher {
	return WithTransform(func(conds []metav1.Condition) *metav1.Condition {
		return apimeta.FindStatusCondition(conds, t)
	}, And(Not(BeNil()), WithTransform(func(c *metav1.Condition) []string {
		return []string{string(c.Status), c.Reason, c.Message}
	}, Equal([]string{string(s), reason, message}))))
}

// counts are the expected package counts of a status.
type counts struct{ total, updated, available, progressed, failed int32 }

// expectCounts checks the counts and the three rollout conditions with their exact messages.
func expectCounts(g Gomega, st convoyv1alpha1.HostedClusterPackageStatus, c counts) {
	g.Expect([]int32{st.TotalPackages, st.UpdatedPackages, st.AvailablePackages, st.UnavailablePackages,
		st.ProgressedPackages, st.FailedPackages}).To(Equal([]int32{c.total, c.updated, c.available,
		c.total - c.available, c.progressed, c.failed}), "total, updated, available, unavailable, progressed, failed")
	availableStatus, availableReason := metav1.ConditionTrue, convoyv1alpha1.EnoughPackagesAvailableReason
	if c.total-c.available > 1 {
		availableStatus, availableReason = metav1.ConditionFalse, convoyv1alpha1.NotEnoughPackagesAvailableReason
	}
	g.Expect(st.Conditions).To(haveCondition(convoyv1alpha1.AvailableCondition, availableStatus, availableReason,
		fmt.Sprintf("%d/%d packages available.", c.available, c.total)))
	progStatus, progReason := metav1.ConditionTrue, convoyv1alpha1.NotAllPackagesProgressedReason
	if c.progressed == c.total {
		progStatus, progReason = metav1.ConditionFalse, convoyv1alpha1.AllPackagesProgressedReason
	}
	g.Expect(st.Conditions).To(haveCondition(convoyv1alpha1.ProgressingCondition, progStatus, progReason,
		fmt.Sprintf("%d/%d packages progressed.", c.progressed, c.total)))
	g.Expect(st.Conditions).To(haveCondition(convoyv1alpha1.HasPausedPackageCondition, metav1.ConditionFalse,
		convoyv1alpha1.NoPackagePausedReason, fmt.Sprintf("0/%d packages paused.", c.total)))
}

// partitionStates returns "name=state" of each partition.
func partitionStates(st convoyv1alpha1.HostedClusterPackageStatus) []string {
	var out []string
	for _, p := range st.Partitions {
		out = append(out, p.Name+"="+p.State)
	}
	return out
}
