package engine

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// maxNamed bounds how many objects one message names.
const maxNamed = 5

// checkOwnership refuses to apply over existing objects that are not this owner's, unless
// the desired object asks for adoption with convoy.dev/adopt: "true".
func (c *cluster) checkOwnership(ph *Phase, objs []*unstructured.Unstructured, obs *observer) error {
	var refused []string
	for _, obj := range objs {
		live := obs.existing(obj)
		if live == nil || c.owns(live) || adopts(obj) {
			continue
		}
		refused = append(refused, fmt.Sprintf("%s (%s)", describe(obj), ownerOf(live)))
	}
	if len(refused) == 0 {
		return nil
	}
	return pass.Stallf(convoyv1alpha1.CollisionReason,
		"phase %q: refusing to take over %s in the %s cluster: %s; annotate the object %s: \"true\" in the manifest to adopt it",
		ph.Name, plural(len(refused), "an existing object", "existing objects"), c.name,
		nameList(refused), convoyv1alpha1.AdoptAnnotation)
}

// adopts reports a desired object annotated convoy.dev/adopt: "true".
func adopts(obj *unstructured.Unstructured) bool {
	return strings.EqualFold(obj.GetAnnotations()[convoyv1alpha1.AdoptAnnotation], "true")
}

// ownerOf says who manages a live object.
func ownerOf(live *unstructured.Unstructured) string {
	l := live.GetLabels()
	name, ns := l[convoyv1alpha1.PackageNameLabel], l[convoyv1alpha1.PackageNamespaceLabel]
	if name == "" {
		return "not managed by convoy"
	}
	kind := l[convoyv1alpha1.OwnerKindLabel]
	if kind == "" {
		kind = "Package"
	}
	return fmt.Sprintf("managed by %s %s/%s", kind, ns, name)
}

// nameList joins names, eliding past maxNamed.
func nameList(names []string) string {
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
