package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/convoy-gitops/convoy/deploy/crds"
)

// Copies of the Package CRD, each changed in one way, say which part of the status schema
// costs what: the same full status is patched to each (statusVariants).

// statusSchemaEdit changes the schema of a copy of the Package CRD (edit gets the
// openAPIV3Schema's properties); stringInventory writes the inventory as one string per entry.
type statusSchemaEdit struct {
	kind, note      string
	edit            func(props map[string]any)
	stringInventory bool
}

// statusSchemaEdits are the copies measured: unchanged (the control), the conditions an atomic
// list instead of a map keyed by type (fewer managedFields entries), the conditions without their
// patterns, lengths, enums and formats, and a status without a schema.
var statusSchemaEdits = []statusSchemaEdit{
	{kind: "PackageCopy", note: "a copy of the Package CRD: the control", edit: func(map[string]any) {}},
	{kind: "AtomicConditions", note: "conditions an atomic list, not a map keyed by type", edit: func(props map[string]any) {
		conds := nested(props, "status", "properties", "conditions")
		conds["x-kubernetes-list-type"] = "atomic"
		delete(conds, "x-kubernetes-list-map-keys")
	}},
	{kind: "LooseConditions", note: "conditions without patterns, lengths, enums and formats", edit: func(props map[string]any) {
		for _, field := range nested(props, "status", "properties", "conditions", "items", "properties") {
			if f, ok := field.(map[string]any); ok {
				for _, k := range []string{"pattern", "maxLength", "enum", "format"} {
					delete(f, k)
				}
			}
		}
	}},
	{kind: "UnvalidatedStatus", note: "a status without a schema (x-kubernetes-preserve-unknown-fields)", edit: func(props map[string]any) {
		props["status"] = map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	}},
	{kind: "NoSpecRules", note: "the spec without its CEL rules (interval, path)", edit: func(props map[string]any) {
		for _, field := range nested(props, "spec", "properties") {
			if f, ok := field.(map[string]any); ok {
				delete(f, "x-kubernetes-validations")
			}
		}
	}},
	{kind: "StringInventory", note: "each inventory entry one string (id, version, cluster, phase)", stringInventory: true,
		edit: func(props map[string]any) {
			nested(props, "status", "properties")["inventory"] = map[string]any{"type": "array",
				"items": map[string]any{"type": "string"}, "x-kubernetes-list-type": "atomic"}
		}},
}

// nested returns the map at path under m, nil when there is none.
func nested(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			return nil
		}
		m = next
	}
	return m
}

// packageCRDCopy returns the Package CRD as kind e.kind of the group bench.convoy.dev, its
// status schema changed by e.edit.
func packageCRDCopy(e statusSchemaEdit) (*unstructured.Unstructured, error) {
	raw, err := crds.FS.ReadFile("convoy.dev_packages.yaml")
	if err != nil {
		return nil, err
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &crd.Object); err != nil {
		return nil, err
	}
	plural := strings.ToLower(e.kind) + "s"
	crd.SetName(plural + "." + widgetGroup)
	crd.SetAnnotations(nil)
	spec := nested(crd.Object, "spec")
	spec["group"] = widgetGroup
	spec["names"] = map[string]any{"kind": e.kind, "listKind": e.kind + "List", "plural": plural, "singular": strings.ToLower(e.kind)}
	delete(spec, "shortNames")
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		props := nested(v.(map[string]any), "schema", "openAPIV3Schema", "properties")
		if nested(props, "status") == nil || nested(props, "spec") == nil {
			return nil, fmt.Errorf("the Package CRD has no spec or status schema")
		}
		e.edit(props)
	}
	return crd, nil
}

// schemaVariants installs the copies of the Package CRD and returns a status variant for each.
func schemaVariants(ctx context.Context, c client.Client) ([]statusVariant, error) {
	var out []statusVariant
	for _, e := range statusSchemaEdits {
		crd, err := packageCRDCopy(e)
		if err != nil {
			return nil, err
		}
		if err := installCRD(ctx, c, crd); err != nil {
			return nil, err
		}
		out = append(out, statusVariant{name: "status patch, full, " + e.kind, note: e.note,
			prepare: func(ctx context.Context, c client.Client, i int) error {
				return applyAll(ctx, c, []*unstructured.Unstructured{copyObject(e.kind, i)})
			},
			write: func(ctx context.Context, c client.Client, i, rev int) error {
				return patchCopyStatus(ctx, c, e, i, rev)
			}})
	}
	return out, nil
}

// copyObject is object i of a copy of the Package CRD, as a HostedClusterPackage applies a
// Package.
func copyObject(kind string, i int) *unstructured.Unstructured {
	u := bookkeepingPackage(statusCostNamespace, variantName("", i), 1)
	u.SetAPIVersion(widgetGroup + "/" + convoyVersion)
	u.SetKind(kind)
	return u
}

// convoyVersion is the version of convoy's API, which the copies keep.
const convoyVersion = "v1alpha1"

// patchCopyStatus merge-patches the full settled status at rev to object i of e's kind.
func patchCopyStatus(ctx context.Context, c client.Client, e statusSchemaEdit, i, rev int) error {
	status := settledStatus(statusCostNamespace, rev, objectsPerPackage, statusParts{conditions: true, phases: true, inventory: true})
	if e.stringInventory {
		status["inventory"] = inventoryStrings(status["inventory"])
	}
	raw, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(widgetGroup + "/" + convoyVersion)
	u.SetKind(e.kind)
	u.SetNamespace(statusCostNamespace)
	u.SetName(variantName("", i))
	return c.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(bareOwner))
}

// inventoryStrings writes each inventory entry as one string.
func inventoryStrings(inventory any) []any {
	entries, _ := inventory.([]any)
	out := make([]any, 0, len(entries))
	for _, raw := range entries {
		e, _ := raw.(map[string]any)
		out = append(out, fmt.Sprintf("%v %v %v %v", e["id"], e["v"], e["cluster"], e["phase"]))
	}
	return out
}
