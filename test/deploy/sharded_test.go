package deploy

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/convoy-gitops/convoy/rollout/rolloutcontroller"
)

// TestShardedOverlay builds examples/deploy/sharded, the overlay of deploy/ with the sharded
// component: the unsharded Deployment spreads Packages over the shards named by the ConfigMap
// of --shards-configmap, which the overlay holds and the controller parses, and
// each of those has a Deployment of its own, hardened like the base one, that reconciles that
// shard only, with its own Git store and no webhook; the API server accepts every Deployment.
func TestShardedOverlay(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	objs, err := buildOverlay("sharded")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(findObject(objs, "CustomResourceDefinition", "packages.convoy.dev")).NotTo(BeNil(), "the overlay holds deploy/")

	main := deploymentOf(g, findObject(objs, "Deployment", "convoy-controller"))
	var configMap string
	for _, arg := range main.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(arg, "--shards-configmap="); ok {
			configMap = v
		}
	}
	ns, name, _ := strings.Cut(configMap, "/")
	g.Expect(ns).To(Equal(controllerNamespace))
	cm := findObject(objs, "ConfigMap", name)
	g.Expect(cm).NotTo(BeNil(), "the overlay holds ConfigMap %s", configMap)
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	sharding, err := rolloutcontroller.ParseShardConfig(data, rolloutcontroller.Sharding{})
	g.Expect(err).NotTo(HaveOccurred())
	shards := sharding.Shards
	g.Expect(shards).To(HaveLen(2))
	selectors := map[string]bool{main.Spec.Selector.MatchLabels["app.kubernetes.io/component"]: true}
	var applied []*unstructured.Unstructured
	for _, shard := range shards {
		u := findObject(objs, "Deployment", "convoy-controller-shard-"+shard)
		g.Expect(u).NotTo(BeNil(), "no Deployment for shard %s", shard)
		d := deploymentOf(g, u)
		g.Expect(d.Namespace).To(Equal(controllerNamespace))
		component := d.Spec.Selector.MatchLabels["app.kubernetes.io/component"]
		g.Expect(selectors).NotTo(HaveKey(component), "the pods of shard %s are selected by one Deployment only", shard)
		selectors[component] = true
		pod := d.Spec.Template.Spec
		g.Expect(pod.ServiceAccountName).To(Equal("convoy-controller"))
		g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
		c := pod.Containers[0]
		g.Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
		g.Expect(c.Args).To(ContainElements("controller", "--shard="+shard, "--leader-elect=true", "--webhook-addr=",
			"--storage-path=/var/lib/convoy/sources"))
		g.Expect(c.Args).NotTo(ContainElement(HavePrefix("--shards")))
		g.Expect(pod.Volumes).To(ContainElement(And(HaveField("Name", "sources"), HaveField("EmptyDir", Not(BeNil())))),
			"shard %s has a store of its own", shard)
		u.SetNamespace("default")
		applied = append(applied, u)
	}
	g.Expect(applyAll(context.Background(), env.Client, applied)).To(Succeed(), "the API server accepts the shard Deployments")
}

// deploymentOf converts u to a Deployment.
func deploymentOf(g Gomega, u *unstructured.Unstructured) *appsv1.Deployment {
	g.Expect(u).NotTo(BeNil())
	d := &appsv1.Deployment{}
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d)).To(Succeed())
	return d
}
