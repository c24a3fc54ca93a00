package main

import (
	"encoding/json"
	"strings"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/cmd/convoy-dev/devdemo"
	"github.com/convoy-gitops/convoy/rollout"
)

// fixtureNow is the clock of the fixed fleet.
var fixtureNow = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)

// Commits of the fixed fleet.
var (
	commitA = strings.Repeat("a", 40)
	commitB = strings.Repeat("b", 40)
	commitC = strings.Repeat("c", 40)
)

// fixtureFleet is a management cluster with six HostedClusters in partitions early, normal and
// late (late-6 not Available) and two HostedClusterPackages: log-collector, half-way through a
// rollout from commit A to commit B, and metrics-forwarder, blocked by a failed Package.
func fixtureFleet() client.Client {
	objs := []client.Object{
		fixtureGitSource(),
		fixtureHCPkg("log-collector", "log-collector-pko", logCollectorStatus()),
		fixtureHCPkg("metrics-forwarder", "metrics-forwarder", metricsForwarderStatus()),
		fixtureRevision("log-collector", "log-collector-6f9c1", commitA, "log-collector-pko"),
		fixtureRevision("log-collector", "log-collector-7d2e4", commitB, "log-collector-pko"),
		fixtureRevision("metrics-forwarder", "metrics-forwarder-5a1b2", commitA, "metrics-forwarder"),
		fixtureRevision("metrics-forwarder", "metrics-forwarder-8c3d4", commitB, "metrics-forwarder"),
	}
	for i, name := range []string{"early-1", "early-2", "normal-3", "normal-4", "late-5", "late-6"} {
		objs = append(objs, fixtureHostedCluster(name, i != 5))
	}
	objs = append(objs,
		fixturePackage("log-collector", "early-1", commitB, true, 10*time.Minute),
		fixturePackage("log-collector", "early-2", commitB, true, 8*time.Minute),
		fixturePackage("log-collector", "normal-3", commitB, false, time.Minute),
		fixturePackage("log-collector", "normal-4", commitA, true, time.Hour),
		fixturePackage("log-collector", "late-5", commitA, true, time.Hour),
		fixturePackage("log-collector", "late-6", commitA, true, time.Hour),
	)
	for _, name := range []string{"early-2", "normal-3", "normal-4", "late-5", "late-6"} {
		objs = append(objs, fixturePackage("metrics-forwarder", name, commitA, true, time.Hour))
	}
	objs = append(objs, fixturePackage("metrics-forwarder", "early-1", commitB, false, 20*time.Minute))
	return fake.NewClientBuilder().WithScheme(newCLIScheme()).WithObjects(objs...).
		WithStatusSubresource(&convoyv1alpha1.HostedClusterPackage{}).Build()
}

func fixtureGitSource() *convoyv1alpha1.GitSource {
	return &convoyv1alpha1.GitSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: "convoy-system", Name: "addons"},
		Spec:       convoyv1alpha1.GitSourceSpec{URL: "https://git.example.com/fleet/addons.git"},
		Status:     convoyv1alpha1.GitSourceStatus{Artifact: &convoyv1alpha1.Artifact{Revision: "main@sha1:" + commitC, Commit: commitC}},
	}
}

func fixtureTemplate(path string) convoyv1alpha1.PackageTemplateSpec {
	return convoyv1alpha1.PackageTemplateSpec{
		SourceRef: convoyv1alpha1.SourceReference{Name: "addons", Namespace: "convoy-system"},
		Path:      path,
	}
}

func fixtureHCPkg(name, path string, status convoyv1alpha1.HostedClusterPackageStatus) *convoyv1alpha1.HostedClusterPackage {
	one := intstr.FromInt32(1)
	return &convoyv1alpha1.HostedClusterPackage{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1, UID: types.UID("uid-" + name)},
		Spec: convoyv1alpha1.HostedClusterPackageSpec{
			Partition: &convoyv1alpha1.PartitionSpec{LabelKey: devdemo.PartitionLabel,
				Order: convoyv1alpha1.PartitionOrder{Static: devdemo.Partitions}},
			Strategy: convoyv1alpha1.HostedClusterPackageStrategy{
				RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{MaxUnavailable: &one}},
			Template: convoyv1alpha1.PackageTemplate{Spec: fixtureTemplate(path)},
		},
		Status: status,
	}
}

func logCollectorStatus() convoyv1alpha1.HostedClusterPackageStatus {
	return convoyv1alpha1.HostedClusterPackageStatus{
		ObservedGeneration: 1, TotalPackages: 6, UpdatedPackages: 3, AvailablePackages: 5,
		UnavailablePackages: 1, ProgressedPackages: 2,
		CurrentRevision: "log-collector-6f9c1", UpdateRevision: "log-collector-7d2e4",
		Partitions: []convoyv1alpha1.PartitionStatus{
			{Name: "early", Total: 2, Updated: 2, Available: 2, Progressed: 2, State: convoyv1alpha1.PartitionDone},
			{Name: "normal", Total: 2, Updated: 1, Available: 1, Progressed: 0, State: convoyv1alpha1.PartitionProgressing},
			{Name: "late", Total: 2, Updated: 0, Available: 2, Progressed: 0, State: convoyv1alpha1.PartitionPending},
		},
		Conditions: []metav1.Condition{
			fixtureCondition(convoyv1alpha1.AvailableCondition, true, convoyv1alpha1.EnoughPackagesAvailableReason, "5/6 packages available."),
			fixtureCondition(convoyv1alpha1.ProgressingCondition, true, convoyv1alpha1.NotAllPackagesProgressedReason, "2/6 packages progressed."),
			fixtureCondition(convoyv1alpha1.HasPausedPackageCondition, false, convoyv1alpha1.NoPackagePausedReason, "0/6 packages paused."),
		},
	}
}

func metricsForwarderStatus() convoyv1alpha1.HostedClusterPackageStatus {
	return convoyv1alpha1.HostedClusterPackageStatus{
		ObservedGeneration: 1, TotalPackages: 6, UpdatedPackages: 1, AvailablePackages: 5,
		UnavailablePackages: 1, FailedPackages: 1,
		CurrentRevision: "metrics-forwarder-5a1b2", UpdateRevision: "metrics-forwarder-8c3d4",
		Partitions: []convoyv1alpha1.PartitionStatus{
			{Name: "early", Total: 2, Updated: 1, Available: 1, State: convoyv1alpha1.PartitionBlocked},
			{Name: "normal", Total: 2, Available: 2, State: convoyv1alpha1.PartitionPending},
			{Name: "late", Total: 2, Available: 2, State: convoyv1alpha1.PartitionPending},
		},
		Failures: []convoyv1alpha1.PackageFailure{{HostedCluster: "clusters/early-1", Reason: rollout.ProgressDeadlineExceededReason,
			Message: "Package clusters-early-1/metrics-forwarder has not progressed at revision bbbbbbbbbbbb for 10m0s: probe failed"}},
		Conditions: []metav1.Condition{
			fixtureCondition(convoyv1alpha1.AvailableCondition, true, convoyv1alpha1.EnoughPackagesAvailableReason, "5/6 packages available."),
			fixtureCondition(convoyv1alpha1.ProgressingCondition, true, convoyv1alpha1.NotAllPackagesProgressedReason, "0/6 packages progressed."),
		},
	}
}

func fixtureCondition(t string, status bool, reason, message string) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: 1,
		LastTransitionTime: metav1.NewTime(fixtureNow.Add(-time.Hour))}
}

func fixtureRevision(owner, name, commit, path string) *appsv1.ControllerRevision {
	data, _ := json.Marshal(map[string]any{"commit": commit, "template": fixtureTemplate(path)})
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "convoy-system", Name: name,
			Labels: map[string]string{convoyv1alpha1.HostedClusterPackageLabel: owner}},
		Data: runtime.RawExtension{Raw: data},
	}
}

func fixtureHostedCluster(name string, available bool) *hyperv1.HostedCluster {
	partition, _, _ := strings.Cut(name, "-")
	status, message := metav1.ConditionTrue, "The hosted control plane is available"
	if !available {
		status, message = metav1.ConditionFalse, "Waiting for the etcd cluster to be ready"
	}
	return &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: name, Labels: map[string]string{devdemo.PartitionLabel: partition}},
		Status: hyperv1.HostedClusterStatus{Conditions: []metav1.Condition{{Type: string(hyperv1.HostedClusterAvailable),
			Status: status, Reason: "AsExpected", Message: message, LastTransitionTime: metav1.NewTime(fixtureNow.Add(-time.Hour))}}},
	}
}

// fixturePackage is the Package of owner for the HostedCluster clusters/cluster, pinned to
// commit for age, progressed or still updating.
func fixturePackage(owner, cluster, commit string, progressed bool, age time.Duration) *convoyv1alpha1.Package {
	path := map[string]string{"log-collector": "log-collector-pko", "metrics-forwarder": "metrics-forwarder"}[owner]
	updatedAt := fixtureNow.Add(-age)
	pkg := &convoyv1alpha1.Package{
		ObjectMeta: metav1.ObjectMeta{Namespace: convoyv1alpha1.HostedControlPlaneNamespace("clusters", cluster), Name: owner,
			Generation: 1, Labels: map[string]string{convoyv1alpha1.HostedClusterPackageLabel: owner},
			Annotations: map[string]string{rollout.SpecUpdatedAtAnnotation: rollout.FormatSpecUpdatedAt(updatedAt)}},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: fixtureTemplate(path), Revision: commit},
	}
	at := metav1.NewTime(updatedAt)
	if progressed {
		pkg.Status.Revision = commit
		pkg.Status.Conditions = []metav1.Condition{
			{Type: convoyv1alpha1.AvailableCondition, Status: metav1.ConditionTrue, Reason: "RevisionAvailable", ObservedGeneration: 1, LastTransitionTime: at},
			{Type: convoyv1alpha1.ProgressingCondition, Status: metav1.ConditionFalse, Reason: "Succeeded", ObservedGeneration: 1, LastTransitionTime: at},
		}
		return pkg
	}
	pkg.Status.Conditions = []metav1.Condition{
		{Type: convoyv1alpha1.AvailableCondition, Status: metav1.ConditionFalse, Reason: "ProbeFailed", Message: "probe failed", ObservedGeneration: 1, LastTransitionTime: at},
		{Type: convoyv1alpha1.ProgressingCondition, Status: metav1.ConditionTrue, Reason: "Progressing", Message: "probe failed", ObservedGeneration: 1, LastTransitionTime: at},
	}
	return pkg
}
