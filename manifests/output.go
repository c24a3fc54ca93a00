package manifests

import (
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// WriteYAML writes the rendered package as a YAML stream grouped by phase: a comment line per
// phase (its position, name, class and object count), then its objects, one document each.
// This is what `convoy render` prints and what the golden files hold.
func (r *Rendered) WriteYAML(w io.Writer) error {
	for i, ph := range r.Phases {
		class := ph.Class
		if class == "" {
			class = "management"
		}
		if _, err := fmt.Fprintf(w, "# phase %d/%d: %s (class: %s, objects: %d)\n", i+1, len(r.Phases), ph.Name, class, len(ph.Objects)); err != nil {
			return err
		}
		for _, o := range ph.Objects {
			out, err := yaml.Marshal(o.Object)
			if err != nil {
				return fmt.Errorf("phase %s: %s %s: %w", ph.Name, o.GetKind(), o.GetName(), err)
			}
			if _, err := fmt.Fprintf(w, "---\n%s", out); err != nil {
				return err
			}
		}
	}
	return nil
}
