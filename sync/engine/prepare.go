package engine

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// splitStages copies the objects of a phase into the definitions applied first
// (CustomResourceDefinitions and Namespaces) and the rest, keeping their order.
func splitStages(objs []*unstructured.Unstructured) (defs, rest []*unstructured.Unstructured) {
	for _, o := range objs {
		cp := o.DeepCopy()
		if isDefinition(cp) {
			defs = append(defs, cp)
		} else {
			rest = append(rest, cp)
		}
	}
	return defs, rest
}

// isDefinition reports a CustomResourceDefinition or a Namespace.
func isDefinition(o *unstructured.Unstructured) bool {
	return isDefinitionKind(o.GroupVersionKind().GroupKind())
}

// isDefinitionKind reports the kinds whose deletion deletes other objects: a
// CustomResourceDefinition (every custom resource of its kind) or a Namespace (everything in
// it).
func isDefinitionKind(gk schema.GroupKind) bool {
	return (gk.Group == "apiextensions.k8s.io" && gk.Kind == "CustomResourceDefinition") ||
		(gk.Group == "" && gk.Kind == "Namespace")
}

// prepare labels the objects (copies) and places them: in the owner's namespace on the
// management cluster, where the manifest says in a hosted cluster.
func (c *cluster) prepare(ph *Phase, objs []*unstructured.Unstructured) error {
	labels := c.labels()
	for _, obj := range objs {
		setLabels(obj, labels)
		namespaced, err := c.client.IsObjectNamespaced(obj)
		if err != nil {
			return c.classify(err)
		}
		if err := c.place(ph, obj, namespaced); err != nil {
			return err
		}
	}
	return nil
}

// place applies the namespace rules to one object.
func (c *cluster) place(ph *Phase, obj *unstructured.Unstructured, namespaced bool) error {
	if c.hosted() {
		return placeHosted(ph, obj, namespaced)
	}
	t := c.target
	switch {
	case !namespaced:
		return pass.Stallf(convoyv1alpha1.ForbiddenTargetReason,
			"phase %q: %s is cluster-scoped: management phases may only hold objects of namespace %s",
			ph.Name, describe(obj), t.Namespace)
	case obj.GetNamespace() == "":
		obj.SetNamespace(t.Namespace)
	case obj.GetNamespace() != t.Namespace:
		return forbiddenNamespace(t, ph, obj)
	}
	return nil
}

// placeHosted applies the namespace rules of a hosted cluster: any scope, and namespaced
// objects name their namespace.
func placeHosted(ph *Phase, obj *unstructured.Unstructured, namespaced bool) error {
	switch {
	case namespaced && obj.GetNamespace() == "":
		return pass.Stallf(convoyv1alpha1.ApplyFailedReason,
			"phase %q: %s has no namespace: objects of hosted-cluster phases name their namespace", ph.Name, describe(obj))
	case !namespaced:
		obj.SetNamespace("")
	}
	return nil
}

// forbiddenNamespace is the error of a management object that names another namespace.
func forbiddenNamespace(t *Target, ph *Phase, obj *unstructured.Unstructured) error {
	return pass.Stallf(convoyv1alpha1.ForbiddenTargetReason,
		"phase %q: %s is in namespace %s: management phases may only hold objects of namespace %s",
		ph.Name, describe(obj), obj.GetNamespace(), t.Namespace)
}

// setLabels adds labels to obj's labels; a convoy.dev/shard the manifest sets is kept.
func setLabels(obj *unstructured.Unstructured, labels map[string]string) {
	own := keepsOwnShard(obj)
	l := obj.GetLabels()
	if l == nil {
		l = make(map[string]string, len(labels))
	}
	for k, v := range labels {
		if k == convoyv1alpha1.ShardLabel && own {
			continue
		}
		l[k] = v
	}
	obj.SetLabels(l)
}

// describe names an object in messages: "apps/Deployment ns/name", "Namespace name".
func describe(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	kind := gvk.Kind
	if gvk.Group != "" {
		kind = gvk.Group + "/" + kind
	}
	if ns := obj.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + obj.GetName()
	}
	return kind + " " + obj.GetName()
}

// isNoMatch reports an unknown kind.
func isNoMatch(err error) bool { return apimeta.IsNoMatchError(err) }
