package synccontroller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sync/engine"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// deploymentYAML is a Deployment "agent" of phase, in namespace when set, judged by kstatus.
func deploymentYAML(phase, namespace string) string {
	ns := ""
	if namespace != "" {
		ns = "\n  namespace: " + namespace
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: agent%s
  annotations: {convoy.dev/phase: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: registry.example/agent:1}]
`, ns, phase)
}

// TestSettledPackageNoticesARegressionWithin30s settles a Package whose Deployment is
// available, in the management or the hosted cluster, then makes the Deployment unavailable by
// a status change only. In the management cluster the watch of applied objects sees it at
// once (well before the health check would); nothing watches a hosted cluster, and the health
// check finds it there within DefaultHealthCheckInterval.
func TestSettledPackageNoticesARegressionWithin30s(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hosted bool
	}{{name: "management cluster"}, {name: "hosted cluster", hosted: true}} {
		t.Run(tc.name, func(t *testing.T) {
			env.Require(t)
			g := NewWithT(t)
			ns, c, phase := fleet.NewNamespaceIn(t, env.Client), env.Client, "outside"
			depNS, objects := ns, deploymentYAML("outside", "")
			if tc.hosted {
				ns, c, phase = hcpNamespace(t, blue), blue.Client, "inside:hosted-cluster"
				depNS = fleet.NewNamespaceIn(t, blue.Client)
				objects = deploymentYAML("inside", depNS)
			}
			repo := newGitSource(t, ns)
			c1, err := repo.Commit("main", "one", map[string]string{"pkg/manifest.yaml": manifest(phase), "pkg/objects.yaml": objects})
			g.Expect(err).NotTo(HaveOccurred())
			key := newPackage(t, ns, "app", "pkg") // spec.interval defaults to 10 minutes
			dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: depNS, Name: "agent"}}
			g.Eventually(func() error { return c.Get(context.Background(), client.ObjectKeyFromObject(dep), dep) }).Should(Succeed())
			setDeploymentAvailable(g, c, dep, true)
			expectAvailableAt(g, key, c1)

			broke := time.Now()
			setDeploymentAvailable(g, c, dep, false)
			g.Eventually(func(g Gomega) {
				g.Expect(getPackage(g, key).Status.Conditions).To(haveCondition(convoyv1alpha1.AvailableCondition, metav1.ConditionFalse, ""))
			}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
			noticed := time.Since(broke)
			t.Logf("regression noticed after %s", noticed.Round(100*time.Millisecond))
			if !tc.hosted {
				g.Expect(noticed).To(BeNumerically("<", DefaultHealthCheckInterval/2), "seen by the watch, not the health check")
			}
		})
	}
}

// setDeploymentAvailable writes the status a Deployment controller would: one available
// replica, or none.
func setDeploymentAvailable(g Gomega, c client.Client, dep *appsv1.Deployment, available bool) {
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(dep), dep)).To(Succeed())
	n, availableStatus, availableReason := int32(1), corev1.ConditionStatus("True"), "MinimumReplicasAvailable"
	if !available {
		n, availableStatus, availableReason = 0, "False", "MinimumReplicasUnavailable"
	}
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1,
		ReadyReplicas: n, AvailableReplicas: n, UnavailableReplicas: 1 - n,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: availableStatus, Reason: availableReason},
			{Type: appsv1.DeploymentProgressing, Status: "True", Reason: "NewReplicaSetAvailable"},
		}}
	g.Expect(c.Status().Update(context.Background(), dep)).To(Succeed(), "status of "+dep.Name)
}

// A settled object whose objects the watch sees waits for its own interval: the watch makes a
// pass when one of them changes. Otherwise the health check caps the wait.
func TestRequeueIntervalOfASettledObject(t *testing.T) {
	g := NewWithT(t)
	c := &Common{HealthCheckInterval: 20 * time.Second}
	g.Expect(c.requeueInterval(&scope{result: &engine.Result{Available: true, Watched: true}}, 10*time.Minute)).To(Equal(10 * time.Minute))
	g.Expect(c.requeueInterval(&scope{result: &engine.Result{Available: true}}, 10*time.Minute)).To(Equal(20 * time.Second))
	g.Expect(c.requeueInterval(&scope{}, 10*time.Minute)).To(Equal(20 * time.Second))
	g.Expect(c.requeueInterval(&scope{}, 5*time.Second)).To(Equal(5 * time.Second))
	g.Expect(c.requeueInterval(&scope{result: &engine.Result{Available: true, Watched: true, Stale: true}}, 10*time.Minute)).To(
		Equal(staleResultDelay), "a change delivered during the pass")
}
