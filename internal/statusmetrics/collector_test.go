package statusmetrics

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
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

func TestCollectorExportsNothingWithoutAManager(t *testing.T) {
	g := NewWithT(t)
	g.Expect(testutil.CollectAndCount(collector)).To(Equal(0))
}
