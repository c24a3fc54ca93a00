package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Paths of the benchmark packages in the Git repository.
const (
	managementPath = "packages/fleet-addon"
	hostedPath     = "packages/hosted-addon"
)

// Names used by the benchmark objects.
const (
	phaseAnnotation = "convoy.dev/phase"
	revisionLabel   = "bench.convoy.dev/revision"
	widgetGroup     = "bench.convoy.dev"
	hostedNamespace = "bench-addon"
	bareNamespace   = "bench-bare"
	// hostedObjects is the size of the hosted package, Namespace included.
	hostedObjects = 50
)

// managementManifest has two management phases and a CEL probe for the Widget.
const managementManifest = `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: fleet-addon}
spec:
  phases:
  - name: rbac
  - name: deploy
  availabilityProbes:
  - selector: {kind: {group: bench.convoy.dev, kind: Widget}}
    probes:
    - cel: {rule: "has(self.spec) && self.spec.size >= 1", message: "the widget has no size"}
`

// hostedManifest has two phases inside the hosted cluster.
const hostedManifest = `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: hosted-addon}
spec:
  phases:
  - {name: namespace, class: hosted-cluster}
  - {name: config, class: hosted-cluster}
`

// obj builds an object of the benchmark packages, labelled with rev and put in phase.
func obj(apiVersion, kind, namespace, name, phase string, rev int, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetName(name)
	u.SetNamespace(namespace)
	u.SetLabels(map[string]string{revisionLabel: fmt.Sprint(rev)})
	u.SetAnnotations(map[string]string{phaseAnnotation: phase})
	return u
}

// managementObjects returns the 10 objects of the management package at rev: five ConfigMaps,
// a Secret, a ServiceAccount, a Role, a RoleBinding and a Widget. Every object changes with
// rev, so a new revision updates all ten. Names get prefix; namespace may be empty.
func managementObjects(namespace, prefix string, rev int) []*unstructured.Unstructured {
	n := func(s string) string { return prefix + s }
	objs := []*unstructured.Unstructured{
		obj("v1", "ServiceAccount", namespace, n("addon"), "rbac", rev, nil),
		obj("rbac.authorization.k8s.io/v1", "Role", namespace, n("addon"), "rbac", rev, map[string]any{
			"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get", "list", "watch"}}}}),
		obj("rbac.authorization.k8s.io/v1", "RoleBinding", namespace, n("addon"), "rbac", rev, map[string]any{
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": n("addon")},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": n("addon")}}}),
		obj("v1", "Secret", namespace, n("addon-credentials"), "deploy", rev, map[string]any{
			"stringData": map[string]any{"token": fmt.Sprintf("token-%d", rev)}}),
		widget(namespace, n("addon"), rev),
	}
	for i := range 5 {
		objs = append(objs, obj("v1", "ConfigMap", namespace, n(fmt.Sprintf("addon-config-%d", i)), "deploy", rev,
			map[string]any{"data": map[string]any{"revision": fmt.Sprint(rev), "settings": strings.Repeat("x", 200)}}))
	}
	return objs
}

// managementObjectsOf returns the management package at rev with n objects: the ten of
// managementObjects, then ConfigMaps of the deploy phase up to n.
func managementObjectsOf(namespace, prefix string, rev, n int) []*unstructured.Unstructured {
	objs := managementObjects(namespace, prefix, rev)
	for i := len(objs); i < n; i++ {
		objs = append(objs, obj("v1", "ConfigMap", namespace, fmt.Sprintf("%saddon-extra-%d", prefix, i), "deploy", rev,
			map[string]any{"data": map[string]any{"revision": fmt.Sprint(rev), "settings": strings.Repeat("x", 200)}}))
	}
	return objs
}

// widget is the Widget of the management package at rev: a custom resource of one field.
func widget(namespace, name string, rev int) *unstructured.Unstructured {
	return obj(widgetGroup+"/v1", "Widget", namespace, name, "deploy", rev, map[string]any{
		"spec": map[string]any{"size": int64(rev%3 + 1)}})
}

// hostedObjectsAt returns the 50 objects of the hosted package at rev, in namespace ns of the
// hosted cluster: the Namespace, RBAC and ConfigMaps.
func hostedObjectsAt(ns string, rev int) []*unstructured.Unstructured {
	objs := []*unstructured.Unstructured{
		obj("v1", "Namespace", "", ns, "namespace", rev, nil),
		obj("v1", "ServiceAccount", ns, "agent", "config", rev, nil),
		obj("rbac.authorization.k8s.io/v1", "Role", ns, "agent", "config", rev, map[string]any{
			"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get"}}}}),
		obj("rbac.authorization.k8s.io/v1", "RoleBinding", ns, "agent", "config", rev, map[string]any{
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "agent"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "agent", "namespace": ns}}}),
	}
	for i := len(objs); i < hostedObjects; i++ {
		objs = append(objs, obj("v1", "ConfigMap", ns, fmt.Sprintf("agent-config-%d", i), "config", rev,
			map[string]any{"data": map[string]any{"revision": fmt.Sprint(rev)}}))
	}
	return objs
}

// packageFiles returns the files of both packages at rev, the management package of
// managementSize objects (managementObjectsOf), as committed to Git; objects are written as
// JSON documents, which are YAML.
func packageFiles(rev, managementSize int) (map[string]string, error) {
	files := map[string]string{
		managementPath + "/manifest.yaml": managementManifest,
		hostedPath + "/manifest.yaml":     hostedManifest,
	}
	sets := map[string][]*unstructured.Unstructured{
		managementPath + "/objects.yaml": managementObjectsOf("", "", rev, managementSize),
		hostedPath + "/objects.yaml":     hostedObjectsAt(hostedNamespace, rev),
	}
	for path, objs := range sets {
		var b strings.Builder
		for _, o := range objs {
			raw, err := json.Marshal(o.Object)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "---\n%s\n", raw)
		}
		files[path] = b.String()
	}
	maps.Copy(files, hostedFleetFiles(rev))
	return files, nil
}

// widgetCRD is the CustomResourceDefinition of the Widget in the management package.
func widgetCRD() *unstructured.Unstructured {
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"spec": map[string]any{"type": "object", "properties": map[string]any{"size": map[string]any{"type": "integer"}}}}}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets." + widgetGroup},
		"spec": map[string]any{
			"group": widgetGroup,
			"names": map[string]any{"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
			"scope": "Namespaced",
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": schema}}},
		},
	}}
}

// installWidgetCRD creates the Widget CRD and waits until it is established.
func installWidgetCRD(ctx context.Context, c client.Client) error {
	return installCRD(ctx, c, widgetCRD())
}

// installCRD creates crd and waits until it is established.
func installCRD(ctx context.Context, c client.Client, crd *unstructured.Unstructured) error {
	if err := c.Create(ctx, crd); err != nil {
		return fmt.Errorf("creating the CRD %s: %w", crd.GetName(), err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, raw := range conds {
			cond, _ := raw.(map[string]any)
			if cond["type"] == "Established" && cond["status"] == "True" {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the CRD %s is not established after a minute", crd.GetName())
}
