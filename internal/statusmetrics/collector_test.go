package statusmetrics

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

func condition(t string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason}
}

func TestCollectorExportsReadyStalledAndFetchFailedOnly(t *testing.T) {
	g := NewWithT(t)
	s := runtime.NewScheme()
	utilruntime.Must(convoyv1alpha1.AddToScheme(s))
	gs := &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: "convoy-system", Name: "addons"},
		Status: convoyv1alpha1.GitSourceStatus{Conditions: []metav1.Condition{
			condition(convoyv1alpha1.ReadyCondition, metav1.ConditionFalse, "GitOperationFailed"),
			condition(convoyv1alpha1.FetchFailedCondition, metav1.ConditionTrue, "GitOperationFailed"),
			condition(convoyv1alpha1.ReconcilingCondition, metav1.ConditionTrue, "Progressing")}}}
	pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters-a", Name: "addon"},
		Status: convoyv1alpha1.SyncStatus{Conditions: []metav1.Condition{
			condition(convoyv1alpha1.ReadyCondition, metav1.ConditionFalse, convoyv1alpha1.HostedClusterUnreachableReason)}}}
	hcpkg := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon"},
		Status: convoyv1alpha1.HostedClusterPackageStatus{Conditions: []metav1.Condition{
			condition(convoyv1alpha1.StalledCondition, metav1.ConditionTrue, "ProgressDeadlineExceeded")}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(gs, pkg, hcpkg).WithStatusSubresource(gs, pkg, hcpkg).Build()
	collector.push(c)
	defer collector.remove(c)

	want := `# HELP convoy_resource_condition A condition of a convoy object (Ready, Stalled, FetchFailed): 1 for the status and reason it has.
# TYPE convoy_resource_condition gauge
convoy_resource_condition{kind="GitSource",name="addons",namespace="convoy-system",reason="GitOperationFailed",status="False",type="Ready"} 1
convoy_resource_condition{kind="GitSource",name="addons",namespace="convoy-system",reason="GitOperationFailed",status="True",type="FetchFailed"} 1
convoy_resource_condition{kind="HostedClusterPackage",name="addon",namespace="",reason="ProgressDeadlineExceeded",status="True",type="Stalled"} 1
convoy_resource_condition{kind="Package",name="addon",namespace="clusters-a",reason="HostedClusterUnreachable",status="False",type="Ready"} 1
`
	g.Expect(testutil.CollectAndCompare(collector, strings.NewReader(want))).To(Succeed())
}

// A manager's cache is read where its informers keep the objects, without copying them: the
// conditions exported are the same, and the cached objects are left as they were.
func TestCollectorReadsTheCacheInPlace(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.NewNamespace(t)
	pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "addon"},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: convoyv1alpha1.PackageTemplateSpec{
			SourceRef: convoyv1alpha1.SourceReference{Name: "addons"}, Path: "addon"}}}
	g.Expect(env.Client.Create(ctx, pkg)).To(Succeed())
	pkg.Status.Conditions = []metav1.Condition{{Type: convoyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: "RevisionAvailable", LastTransitionTime: metav1.Now()}}
	g.Expect(env.Client.Status().Update(ctx, pkg)).To(Succeed())

	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()
	g.Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
	inPlace := &listForbidden{Cache: c, t: t}
	collector.push(inPlace)
	defer collector.remove(inPlace)

	want := fmt.Sprintf(`convoy_resource_condition{kind="Package",name="addon",namespace=%q,reason="RevisionAvailable",status="True",type="Ready"} 1`, ns)
	g.Eventually(func() string { return scrape(g) }).Should(ContainSubstring(want))
	cached := &convoyv1alpha1.Package{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pkg), cached)).To(Succeed())
	g.Expect(cached.Status.Conditions).To(HaveLen(1))
	g.Expect(scrape(g)).To(ContainSubstring(want), "a second scrape reads the same")

	pkg.Status.Conditions[0].Status, pkg.Status.Conditions[0].Reason = metav1.ConditionFalse, "ProbeFailed"
	g.Expect(env.Client.Status().Update(ctx, pkg)).To(Succeed())
	changed := fmt.Sprintf(`convoy_resource_condition{kind="Package",name="addon",namespace=%q,reason="ProbeFailed",status="False",type="Ready"} 1`, ns)
	g.Eventually(func() string { return scrape(g) }).Should(And(ContainSubstring(changed), Not(ContainSubstring(want))),
		"a new resourceVersion makes new series")
	g.Expect(env.Client.Delete(ctx, pkg)).To(Succeed())
	g.Eventually(func() string { return scrape(g) }).ShouldNot(ContainSubstring(changed))
	g.Expect(collector.memo.entries).NotTo(HaveKey(pkg.UID), "the series of a deleted object are forgotten")
}

// The memo sends an object's series again while its resourceVersion stays, and forgets the
// objects a scrape did not see.
func TestSeriesAreMadeOncePerResourceVersion(t *testing.T) {
	g := NewWithT(t)
	var memo seriesMemo
	made := 0
	newSeries := func() []prometheus.Metric {
		made++
		return []prometheus.Metric{prometheus.MustNewConstMetric(conditionDesc, prometheus.GaugeValue, 1,
			"Package", "ns", "a", "Ready", "True", "RevisionAvailable")}
	}
	a := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "a", ResourceVersion: "1"}}
	b := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "b", ResourceVersion: "1"}}
	scrape := func(objs ...client.Object) {
		memo.begin()
		defer memo.end()
		for _, o := range objs {
			g.Expect(memo.seriesOf(o, newSeries)).To(HaveLen(1))
		}
	}
	scrape(a, b)
	scrape(a, b)
	g.Expect(made).To(Equal(2), "unchanged objects keep their series")
	a.ResourceVersion = "2"
	scrape(a)
	g.Expect(made).To(Equal(3))
	g.Expect(memo.entries).To(HaveLen(1), "b was not seen")
	scrape(&convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Name: "no-uid"}})
	g.Expect(made).To(Equal(4))
	g.Expect(memo.entries).To(BeEmpty(), "an object without a UID is not remembered")
}

// listForbidden is a cache whose List fails the test: the collector must read the informers'
// stores in place.
type listForbidden struct {
	cache.Cache
	t *testing.T
}

func (l *listForbidden) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	l.t.Errorf("the collector listed %T from a cache", list)
	return l.Cache.List(ctx, list, opts...)
}

// scrape returns the collector's output in the text format.
func scrape(g Gomega) string {
	reg := prometheus.NewPedanticRegistry()
	g.Expect(reg.Register(collector)).To(Succeed())
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var out strings.Builder
	for _, f := range families {
		_, err := expfmt.MetricFamilyToText(&out, f)
		g.Expect(err).NotTo(HaveOccurred())
	}
	return out.String()
}

func TestCollectorExportsNothingWithoutAManager(t *testing.T) {
	g := NewWithT(t)
	g.Expect(testutil.CollectAndCount(collector)).To(Equal(0))
}
