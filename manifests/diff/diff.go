package diff

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/convoy-gitops/convoy/manifests"
)

// Action says what happens to an object.
type Action string

const (
	// Added objects are in the new render only.
	Added Action = "added"
	// Removed objects are in the old render only; a sync prunes them.
	Removed Action = "removed"
	// Changed objects are in both, with a different cleaned content.
	Changed Action = "changed"
)

// Report is the difference between two renders, phase by phase.
type Report struct {
	// From and To name the two sides, e.g. two commits or two directories.
	From string `json:"from"`
	To   string `json:"to"`
	// Phases that hold at least one difference, in the order of the new render (phases
	// only the old render has come last).
	Phases []PhaseDiff `json:"phases"`
}

// PhaseDiff is the differences of one phase.
type PhaseDiff struct {
	// Name of the phase.
	Name string `json:"name"`
	// Class is "management" or "hosted-cluster".
	Class string `json:"class"`
	// Objects that differ, ordered by kind, namespace and name.
	Objects []ObjectDiff `json:"objects"`
}

// ObjectDiff is the difference of one object.
type ObjectDiff struct {
	// Action is added, removed or changed.
	Action Action `json:"action"`
	// APIVersion and Kind of the object (of the new side, when it has one).
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace and Name identify the object.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// MovedFrom is the old phase of an object that changes phase.
	MovedFrom string `json:"movedFrom,omitempty"`
	// Note says more about the object, e.g. why a sync would refuse it.
	Note string `json:"note,omitempty"`
	// Diff is a unified diff of the cleaned YAML: all "+" lines for an added object, all "-"
	// lines for a removed one.
	Diff string `json:"diff"`
}

// Counts returns how many objects are added, changed and removed.
func (p PhaseDiff) Counts() (added, changed, removed int) {
	for _, o := range p.Objects {
		switch o.Action {
		case Added:
			added++
		case Changed:
			changed++
		case Removed:
			removed++
		}
	}
	return added, changed, removed
}

// Empty reports whether the two sides are the same.
func (r *Report) Empty() bool { return len(r.Phases) == 0 }

// Counts returns the totals over every phase.
func (r *Report) Counts() (added, changed, removed int) {
	for _, p := range r.Phases {
		a, c, d := p.Counts()
		added, changed, removed = added+a, changed+c, removed+d
	}
	return added, changed, removed
}

// Add records the difference of an object in a phase, after the phases recorded so far when
// the phase is new.
func (r *Report) Add(phase, class string, d ObjectDiff) {
	for i := range r.Phases {
		if r.Phases[i].Name == phase && r.Phases[i].Class == class {
			r.Phases[i].Objects = append(r.Phases[i].Objects, d)
			return
		}
	}
	r.Phases = append(r.Phases, PhaseDiff{Name: phase, Class: class, Objects: []ObjectDiff{d}})
}

// Ref names an object independently of its API version.
func (o ObjectDiff) Ref() string {
	group, _, _ := strings.Cut(o.APIVersion, "/")
	if !strings.Contains(o.APIVersion, "/") {
		group = ""
	}
	kind := o.Kind
	if group != "" {
		kind += "." + group
	}
	if o.Namespace == "" {
		return kind + " " + o.Name
	}
	return kind + " " + o.Namespace + "/" + o.Name
}

// placed is an object with the phase it belongs to.
type placed struct {
	phase, class string
	obj          *unstructured.Unstructured
}

// Renders compares the old and the new render of a package; either may be nil for a package
// that does not exist on that side.
func Renders(from, to string, old, cur *manifests.Rendered) (*Report, error) {
	oldObjs, _ := index(old)
	newObjs, order := index(cur)
	report := &Report{From: from, To: to, Phases: []PhaseDiff{}}
	phases := map[string]*PhaseDiff{}
	phaseOf := func(name, class string) *PhaseDiff {
		if p, ok := phases[name]; ok {
			return p
		}
		phases[name] = &PhaseDiff{Name: name, Class: class}
		order = appendOnce(order, name)
		return phases[name]
	}
	for _, key := range sortedKeys(newObjs) {
		n := newObjs[key]
		o, existed := oldObjs[key]
		d, err := Objects(o.obj, n.obj)
		if err != nil {
			return nil, err
		}
		moved := existed && o.phase != n.phase
		switch {
		case d == nil && !moved:
			continue
		case d == nil:
			d = &ObjectDiff{Action: Changed, APIVersion: n.obj.GetAPIVersion(), Kind: n.obj.GetKind(),
				Namespace: n.obj.GetNamespace(), Name: n.obj.GetName()}
		}
		if moved {
			d.MovedFrom = o.phase
		}
		p := phaseOf(n.phase, n.class)
		p.Objects = append(p.Objects, *d)
	}
	for _, key := range sortedKeys(oldObjs) {
		if _, kept := newObjs[key]; kept {
			continue
		}
		o := oldObjs[key]
		d, err := Objects(o.obj, nil)
		if err != nil {
			return nil, err
		}
		p := phaseOf(o.phase, o.class)
		p.Objects = append(p.Objects, *d)
	}
	for _, name := range order {
		if p, ok := phases[name]; ok {
			report.Phases = append(report.Phases, *p)
		}
	}
	return report, nil
}

// index maps each object of a render by its key and returns the phase names in order.
func index(r *manifests.Rendered) (map[string]placed, []string) {
	objs := map[string]placed{}
	if r == nil {
		return objs, nil
	}
	var order []string
	for _, ph := range r.Phases {
		class := ph.Class
		if class == "" {
			class = "management"
		}
		order = append(order, ph.Name)
		for _, o := range ph.Objects {
			objs[Key(o)] = placed{phase: ph.Name, class: class, obj: o}
		}
	}
	return objs, order
}

// Key identifies an object by API group, kind, namespace and name.
func Key(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	return strings.Join([]string{gvk.Group, gvk.Kind, o.GetNamespace(), o.GetName()}, "/")
}

// Objects returns the difference between old and cur (either may be nil), or nil when their
// cleaned YAML is the same.
func Objects(old, cur *unstructured.Unstructured) (*ObjectDiff, error) {
	oldYAML, err := cleanYAML(old)
	if err != nil {
		return nil, err
	}
	newYAML, err := cleanYAML(cur)
	if err != nil {
		return nil, err
	}
	if oldYAML == newYAML {
		return nil, nil
	}
	d := &ObjectDiff{Action: Changed}
	ref := cur
	switch {
	case old == nil:
		d.Action = Added
	case cur == nil:
		d.Action, ref = Removed, old
	}
	d.APIVersion, d.Kind = ref.GetAPIVersion(), ref.GetKind()
	d.Namespace, d.Name = ref.GetNamespace(), ref.GetName()
	d.Diff, err = Unified(d.Ref(), oldYAML, newYAML)
	return d, err
}

// cleanYAML returns the YAML of o without noise, or "" for nil.
func cleanYAML(o *unstructured.Unstructured) (string, error) {
	if o == nil {
		return "", nil
	}
	out, err := yaml.Marshal(Clean(o).Object)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
	}
	return string(out), nil
}

// Unified returns a unified diff of two YAML texts with three lines of context, labelled with
// the object's name.
func Unified(name, old, cur string) (string, error) {
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        lines(old),
		B:        lines(cur),
		FromFile: "a/" + name,
		ToFile:   "b/" + name,
		Context:  3,
	})
}

// lines splits s into lines that keep their newline; "" has none.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]placed) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// appendOnce appends s unless list holds it.
func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
