package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// perfObjects returns 200 objects of six kinds, as a mid-sized add-on package would hold; the
// 80 ConfigMaps hold version.
func perfObjects(namespace, version string) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	add := func(n int, build func(i int) *unstructured.Unstructured) {
		for i := range n {
			objs = append(objs, build(i))
		}
	}
	add(80, func(i int) *unstructured.Unstructured {
		return kubetest.ConfigMap(namespace, fmt.Sprintf("cm-%d", i), map[string]string{"key": fmt.Sprint(i), "version": version})
	})
	add(40, func(i int) *unstructured.Unstructured {
		return kubetest.Object("v1", "Secret", namespace, fmt.Sprintf("secret-%d", i), map[string]any{"stringData": map[string]any{"k": "v"}})
	})
	add(30, func(i int) *unstructured.Unstructured {
		return kubetest.Object("v1", "ServiceAccount", namespace, fmt.Sprintf("sa-%d", i), nil)
	})
	add(20, func(i int) *unstructured.Unstructured {
		return kubetest.Object("v1", "Service", namespace, fmt.Sprintf("svc-%d", i), map[string]any{"spec": map[string]any{
			"ports": []any{map[string]any{"port": int64(80)}}, "selector": map[string]any{"app": "x"}}})
	})
	add(15, func(i int) *unstructured.Unstructured {
		return kubetest.Object("rbac.authorization.k8s.io/v1", "Role", namespace, fmt.Sprintf("role-%d", i), map[string]any{
			"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get"}}}})
	})
	add(15, func(i int) *unstructured.Unstructured {
		return kubetest.Object("rbac.authorization.k8s.io/v1", "RoleBinding", namespace, fmt.Sprintf("rb-%d", i), map[string]any{
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": fmt.Sprintf("role-%d", i)},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": fmt.Sprintf("sa-%d", i), "namespace": namespace}}})
	})
	return objs
}

// TestApplyPerformance measures applying a 200-object package with the engine, cold then
// unchanged, next to a bare server-side apply loop over the same objects in the same run.
func TestApplyPerformance(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	mgmt, counter := countingClient(t, env.Config)
	_ = mgmt.RESTMapper() // discovery happens on first use of each kind: warm it with a bare loop first
	warm := fleet.NewNamespaceIn(t, env.Client)
	bareLoop(ctx, g, mgmt, perfObjects(warm, "1"))
	counter.take()

	passes := []struct{ name, version string }{{"cold", "1"}, {"no-op", "1"}, {"update", "2"}}
	bareNS := fleet.NewNamespaceIn(t, env.Client)
	for _, pass := range passes {
		d := bareLoop(ctx, g, mgmt, perfObjects(bareNS, pass.version))
		c := counter.take()
		t.Logf("bare SSA loop, %-6s: %7s, %3d requests (%d writes) %v", pass.name, d.Round(time.Millisecond), total(c), writes(c), c)
	}

	tgt := &Target{Namespace: fleet.NewNamespaceIn(t, env.Client), Name: "perf", Management: mgmt}
	engine := memoryEngine(Options{Controller: "test"}, nil, nil)
	res := &Result{}
	for _, pass := range passes {
		rev := &Revision{ID: pass.version, Phases: []Phase{{Name: "all", Objects: perfObjects("", pass.version)}}}
		start := time.Now()
		var err error
		res, err = engine.Sync(ctx, tgt, rev, res.Inventory)
		d := time.Since(start)
		g.Expect(err).NotTo(HaveOccurred())
		c := counter.take()
		t.Logf("convoy engine, %-6s: %7s, %3d requests (%d writes) %v; %s", pass.name, d.Round(time.Millisecond), total(c), writes(c), c, res.Changes)
		if pass.name == "no-op" {
			g.Expect(writes(c)).To(BeZero())
		}
	}
}

// bareLoop applies objs one by one with server-side apply, as the floor to compare with.
func bareLoop(ctx context.Context, g Gomega, c client.Client, objs []*unstructured.Unstructured) time.Duration {
	start := time.Now()
	for _, obj := range objs {
		g.Expect(c.Patch(ctx, obj, client.Apply, client.ForceOwnership, client.FieldOwner("bare"))).To(Succeed())
	}
	return time.Since(start)
}
