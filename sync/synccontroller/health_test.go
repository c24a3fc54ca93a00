package synccontroller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// deploymentYAML is a Deployment of the management phase "outside", judged by kstatus.
const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: agent
  annotations: {convoy.dev/phase: outside}
spec:
  replicas: 1
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: registry.example/agent:1}]
`

// TestSettledPackageNoticesARegressionWithin30s settles a Package whose Deployment is
// available, then makes the Deployment unavailable by a status change only (which the watch of
// a settled Package ignores): the health check finds it within DefaultHealthCheckInterval.
func TestSettledPackageNoticesARegressionWithin30s(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ns := fleet.NewNamespaceIn(t, env.Client)
	repo := newGitSource(t, ns)
	c1, err := repo.Commit("main", "one", map[string]string{
		"pkg/manifest.yaml": manifest("outside"), "pkg/objects.yaml": deploymentYAML,
	})
	g.Expect(err).NotTo(HaveOccurred())
	key := newPackage(t, ns, "app", "pkg") // spec.interval defaults to 10 minutes
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}}
	g.Eventually(func() error { return env.Client.Get(context.Background(), client.ObjectKeyFromObject(dep), dep) }).Should(Succeed())
	setDeploymentAvailable(g, dep, true)
	expectAvailableAt(g, key, c1)

	broke := time.Now()
	setDeploymentAvailable(g, dep, false)
	g.Eventually(func(g Gomega) {
		g.Expect(getPackage(g, key).Status.Conditions).To(haveCondition(convoyv1alpha1.AvailableCondition, metav1.ConditionFalse, ""))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	t.Logf("regression noticed after %s", time.Since(broke).Round(100*time.Millisecond))
}

// setDeploymentAvailable writes the status a Deployment controller would: one available
// replica, or none.
func setDeploymentAvailable(g Gomega, dep *appsv1.Deployment, available bool) {
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(dep), dep)).To(Succeed())
	n := int32(1)
	if !available {
		n = 0
	}
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1,
		ReadyReplicas: n, AvailableReplicas: n, UnavailableReplicas: 1 - n,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: "True", Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: "True", Reason: "NewReplicaSetAvailable"},
		}}
	if !available {
		dep.Status.Conditions[0].Status, dep.Status.Conditions[0].Reason = "False", "MinimumReplicasUnavailable"
	}
	g.Expect(env.Client.Status().Update(context.Background(), dep)).To(Succeed(), fmt.Sprintf("status of %s", dep.Name))
}
