package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// The fixture's partition label and revisions.
const (
	fixtureLabel    = "hypershift.openshift.io/risk-group"
	fixtureSourceNS = "convoy-system"
	// fixtureOwnerLabel keeps each fixture's HostedClusters to its own HostedClusterPackage.
	fixtureOwnerLabel = "test.convoy.dev/fixture"
	fixtureSecretVal  = "s3cr3t-kubeconfig-value-never-in-the-browser"
)

var (
	fixturePartitions = []string{"early", "normal", "late"}
	fixtureCommitA    = strings.Repeat("a", 40)
	fixtureCommitB    = strings.Repeat("b", 40)
)

// fixtureRollout is a HostedClusterPackage half-way from commit A to commit B over n clusters
// spread over early, normal and late (cluster names prefixed with prefix): early progressed,
// the first of normal failed long ago, the second of normal updating, the rest waiting, and the
// last cluster not Available (skipped). Its template names a Secret whose value must never
// reach the browser. With checks, every partition runs a query check for an hour, and early's
// has passed three evaluations.
type fixtureRollout struct {
	name, prefix string
	n            int
	checks       bool
}

// seed creates the HostedClusters (without API servers), the GitSource, the revisions, the
// Packages, the Secret and the HostedClusterPackage with the status the planner computes.
func (fx fixtureRollout) seed(ctx context.Context, f *simfleet.Fleet) error {
	c := f.Client
	inputs := make([]simfleet.HostedClusterInput, fx.n)
	for i := range inputs {
		inputs[i] = simfleet.HostedClusterInput{Name: fx.cluster(i), Labels: map[string]string{fixtureLabel: fx.partition(i), fixtureOwnerLabel: fx.name},
			WithoutAPIServer: true, Unavailable: i == fx.n-1}
	}
	if _, err := f.AddHostedClusters(ctx, inputs...); err != nil {
		return err
	}
	if err := createAll(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fixtureSourceNS}}); err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	objs := []client.Object{fx.hcpkg(), fx.revision("a", fixtureCommitA), fx.revision("b", fixtureCommitB),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fixtureSourceNS, Name: fx.name + "-kubeconfig"},
			StringData: map[string]string{"kubeconfig": fixtureSecretVal}}}
	if err := createAll(ctx, c, objs...); err != nil {
		return err
	}
	if err := fx.seedPackages(ctx, c); err != nil {
		return err
	}
	return fx.writeStatus(ctx, c)
}

func (fx fixtureRollout) cluster(i int) string { return fmt.Sprintf("%s-%04d", fx.prefix, i) }

func (fx fixtureRollout) partition(i int) string {
	return fixturePartitions[i*len(fixturePartitions)/fx.n]
}

func (fx fixtureRollout) template() convoyv1alpha1.PackageTemplateSpec {
	return convoyv1alpha1.PackageTemplateSpec{
		SourceRef: convoyv1alpha1.SourceReference{Name: "addons", Namespace: fixtureSourceNS}, Path: "extra-component",
		// Note: the CRD defaults interval; the revision stores the defaulted template, as the controller does.
		Interval: &metav1.Duration{Duration: convoyv1alpha1.DefaultPackageInterval},
		HostedCluster: &convoyv1alpha1.HostedClusterTarget{KubeconfigSecretRef: &convoyv1alpha1.SecretKeyReference{
			Name: fx.name + "-kubeconfig", Key: "kubeconfig"}},
	}
}

func (fx fixtureRollout) hcpkg() *convoyv1alpha1.HostedClusterPackage {
	one := intstr.FromInt32(2)
	deadline := int32(60)
	return &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: fx.name},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			HostedClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{fixtureOwnerLabel: fx.name}},
			Partition:             &convoyv1alpha1.PartitionSpec{LabelKey: fixtureLabel, Order: convoyv1alpha1.PartitionOrder{Static: fixturePartitions}},
			Strategy: convoyv1alpha1.HostedClusterPackageStrategy{RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{
				MaxUnavailable: &one, ProgressDeadlineSeconds: &deadline}},
			Template: convoyv1alpha1.PackageTemplate{Spec: fx.template()},
			Checks:   fx.specChecks(),
		},
	}
}

// specChecks are the rollout's checks: a query check of an hour when fx has checks.
func (fx fixtureRollout) specChecks() []convoyv1alpha1.RolloutCheck {
	if !fx.checks {
		return nil
	}
	return []convoyv1alpha1.RolloutCheck{{Name: "error-rate", DurationSeconds: 3600, Prometheus: &convoyv1alpha1.PrometheusCheck{
		Address: "http://prometheus.monitoring:9090", Query: "max(addon_error_ratio)", SuccessCondition: "values.all(v, v < 0.05)"}}}
}

// checkResults are the results of early's checks the status holds before the planner runs.
func (fx fixtureRollout) checkResults() []convoyv1alpha1.PartitionStatus {
	if !fx.checks {
		return nil
	}
	evaluated := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	return []convoyv1alpha1.PartitionStatus{{Name: "early", State: convoyv1alpha1.PartitionDone,
		Checks: []convoyv1alpha1.CheckStatus{{Name: "error-rate", Revision: fx.name + "-b", State: convoyv1alpha1.CheckRunning,
			Passes: 3, LastValue: "[0.002]", Message: "values.all(v, v < 0.05) held", LastEvaluated: &evaluated}}}}
}

func (fx fixtureRollout) revision(suffix, commit string) *appsv1.ControllerRevision {
	data, _ := json.Marshal(map[string]any{"commit": commit, "template": fx.template()})
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: fixtureSourceNS, Name: fx.name + "-" + suffix,
			Labels: map[string]string{convoyv1alpha1.HostedClusterPackageLabel: fx.name}},
		Data: runtime.RawExtension{Raw: data},
	}
}

// seedPackages creates one Package per available cluster, in the state the fixture describes.
func (fx fixtureRollout) seedPackages(ctx context.Context, c client.Client) error {
	firstNormal := -1
	for i := 0; i < fx.n-1; i++ {
		partition := fx.partition(i)
		if partition == "normal" && firstNormal < 0 {
			firstNormal = i
		}
		commit, progressed, updatedAgo := fixtureCommitA, true, time.Hour
		switch {
		case partition == "early":
			commit, updatedAgo = fixtureCommitB, 20*time.Minute
		case i == firstNormal:
			commit, progressed, updatedAgo = fixtureCommitB, false, 10*time.Minute
		case i == firstNormal+1:
			commit, progressed, updatedAgo = fixtureCommitB, false, 5*time.Second
		}
		if err := fx.createPackage(ctx, c, i, commit, progressed, time.Now().Add(-updatedAgo)); err != nil {
			return err
		}
	}
	return nil
}

// createPackage creates the Package of cluster i at commit, progressed or stuck applying.
func (fx fixtureRollout) createPackage(ctx context.Context, c client.Client, i int, commit string, progressed bool, updatedAt time.Time) error {
	pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{
		Namespace: convoyv1alpha1.HostedControlPlaneNamespace(simfleet.DefaultHostedClusterNamespace, fx.cluster(i)), Name: fx.name,
		Labels:      map[string]string{convoyv1alpha1.HostedClusterPackageLabel: fx.name},
		Annotations: map[string]string{rollout.SpecUpdatedAtAnnotation: rollout.FormatSpecUpdatedAt(updatedAt)}},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: fx.template(), Revision: commit}}
	if err := c.Create(ctx, pkg); err != nil {
		return err
	}
	pkg.Status = packageStatus(pkg.Generation, commit, progressed, updatedAt)
	return c.Status().Update(ctx, pkg)
}

// packageStatus is a Package's status: progressed at commit, or failing its probe there.
func packageStatus(gen int64, commit string, progressed bool, at time.Time) convoyv1alpha1.SyncStatus {
	cond := func(t string, ok bool, reason, msg string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(at.Add(time.Second))}
	}
	st := convoyv1alpha1.SyncStatus{ObservedGeneration: gen, LastAttemptedRevision: commit,
		Phases: []convoyv1alpha1.PhaseStatus{{Name: "rbac", Objects: 1, Available: true},
			{Name: "deploy", Class: "hosted-cluster", Objects: 1, Available: progressed}},
		Inventory: []convoyv1alpha1.InventoryEntry{
			{ID: "_extra-component_rbac.authorization.k8s.io_ClusterRole", Version: "v1", Cluster: "management", Phase: "rbac"},
			{ID: "kube-system_extra-component_apps_Deployment", Version: "v1", Cluster: "hosted", Phase: "deploy"}}}
	if progressed {
		st.Revision = commit
		st.Conditions = []metav1.Condition{cond(convoyv1alpha1.AvailableCondition, true, convoyv1alpha1.RevisionAvailableReason, "available"),
			cond(convoyv1alpha1.ProgressingCondition, false, convoyv1alpha1.SucceededReason, "done"),
			cond(convoyv1alpha1.ReadyCondition, true, convoyv1alpha1.SucceededReason, "ready")}
		return st
	}
	st.Phases[1].Message = "Deployment kube-system/extra-component: 0/1 replicas available"
	st.Conditions = []metav1.Condition{cond(convoyv1alpha1.AvailableCondition, false, convoyv1alpha1.ProbeFailedReason, st.Phases[1].Message),
		cond(convoyv1alpha1.ProgressingCondition, true, convoyv1alpha1.ProgressingReason, "applying"),
		cond(convoyv1alpha1.ReadyCondition, false, convoyv1alpha1.ProbeFailedReason, st.Phases[1].Message)}
	return st
}

// writeStatus sets the HostedClusterPackage's status to what the planner concludes.
func (fx fixtureRollout) writeStatus(ctx context.Context, c client.Client) error {
	h := &convoyv1alpha1.HostedClusterPackage{}
	if err := c.Get(ctx, client.ObjectKey{Name: fx.name}, h); err != nil {
		return err
	}
	h.Status.UpdateRevision, h.Status.CurrentRevision = fx.name+"-b", fx.name+"-a"
	h.Status.Partitions = fx.checkResults()
	if err := c.Status().Update(ctx, h); err != nil {
		return err
	}
	snap, err := fleetview.Read(ctx, c, fx.name)
	if err != nil {
		return err
	}
	plan, _, err := fleetview.CurrentPlan(snap, time.Now())
	if err != nil {
		return err
	}
	st := &h.Status
	st.ObservedGeneration = h.Generation
	st.Partitions, st.Failures = plan.Partitions, plan.Failed[:min(len(plan.Failed), convoyv1alpha1.MaxFailureSamples)]
	k := plan.Counts
	st.TotalPackages, st.UpdatedPackages, st.AvailablePackages, st.ProgressedPackages = k.Total, k.Updated, k.Available, k.Progressed
	st.FailedPackages, st.SkippedPackages, st.UnavailablePackages = k.Failed, k.Skipped, k.Unavailable
	st.Conditions = plan.Conditions
	st.Conditions = append(st.Conditions, metav1.Condition{Type: convoyv1alpha1.StalledCondition, Status: metav1.ConditionTrue,
		Reason: rollout.ProgressDeadlineExceededReason, Message: "a Package failed", LastTransitionTime: metav1.Now()})
	return c.Status().Update(ctx, h)
}

// createAll creates objs in order.
func createAll(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}
