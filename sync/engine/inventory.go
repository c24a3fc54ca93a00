package engine

import (
	"fmt"

	cliobject "github.com/fluxcd/cli-utils/pkg/object"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// entryFor returns the inventory entry of an applied object.
func entryFor(c *cluster, phase string, obj *unstructured.Unstructured) convoyv1alpha1.InventoryEntry {
	return convoyv1alpha1.InventoryEntry{
		ID:      cliobject.UnstructuredToObjMetadata(obj).String(),
		Version: obj.GroupVersionKind().Version,
		Cluster: c.name,
		Phase:   phase,
	}
}

// entryKey identifies an entry across clusters.
func entryKey(e convoyv1alpha1.InventoryEntry) string { return e.Cluster + "/" + e.ID }

// metadataFor returns a metadata-only object naming the entry's object.
func metadataFor(e convoyv1alpha1.InventoryEntry) (*metav1.PartialObjectMetadata, error) {
	m, err := cliobject.ParseObjMetadata(e.ID)
	if err != nil {
		return nil, fmt.Errorf("inventory entry %q: %w", e.ID, err)
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: m.GroupKind.Group, Version: e.Version, Kind: m.GroupKind.Kind})
	obj.SetNamespace(m.Namespace)
	obj.SetName(m.Name)
	return obj, nil
}

// mergeInventories returns first, then the entries of second not in first.
func mergeInventories(first, second []convoyv1alpha1.InventoryEntry) []convoyv1alpha1.InventoryEntry {
	out := make([]convoyv1alpha1.InventoryEntry, 0, len(first)+len(second))
	out = append(out, first...)
	return append(out, subtract(second, first)...)
}

// subtract returns the entries of from not in minus, in order.
func subtract(from, minus []convoyv1alpha1.InventoryEntry) []convoyv1alpha1.InventoryEntry {
	drop := make(map[string]bool, len(minus))
	for _, e := range minus {
		drop[entryKey(e)] = true
	}
	var out []convoyv1alpha1.InventoryEntry
	for _, e := range from {
		if !drop[entryKey(e)] {
			out = append(out, e)
		}
	}
	return out
}

// group is a run of inventory entries of one phase in one cluster.
type group struct {
	phase, cluster string
	entries        []convoyv1alpha1.InventoryEntry
}

// groupByPhase splits inv into consecutive runs of the same phase and cluster, in order.
func groupByPhase(inv []convoyv1alpha1.InventoryEntry) []group {
	var out []group
	for _, e := range inv {
		if n := len(out); n > 0 && out[n-1].phase == e.Phase && out[n-1].cluster == e.Cluster {
			out[n-1].entries = append(out[n-1].entries, e)
			continue
		}
		out = append(out, group{phase: e.Phase, cluster: e.Cluster, entries: []convoyv1alpha1.InventoryEntry{e}})
	}
	return out
}

// flatten joins groups back into an inventory.
func flatten(groups []group) []convoyv1alpha1.InventoryEntry {
	var out []convoyv1alpha1.InventoryEntry
	for _, g := range groups {
		out = append(out, g.entries...)
	}
	return out
}

// maxLogged bounds the objects one log line names.
const maxLogged = 10

// entryNames names the objects of the first maxLogged entries of inv, "Kind ns/name" or "Kind
// name", for log lines.
func entryNames(inv []convoyv1alpha1.InventoryEntry) []string {
	names := make([]string, 0, min(len(inv), maxLogged))
	for _, e := range inv[:min(len(inv), maxLogged)] {
		names = append(names, entryName(e.ID))
	}
	return names
}

// entryName names the object of an inventory entry's ID, "Kind ns/name" or "Kind name"; an ID
// that names no object is returned as it is.
func entryName(id string) string {
	m, err := cliobject.ParseObjMetadata(id)
	switch {
	case err != nil:
		return id
	case m.Namespace == "":
		return m.GroupKind.Kind + " " + m.Name
	}
	return m.GroupKind.Kind + " " + m.Namespace + "/" + m.Name
}
