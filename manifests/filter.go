package manifests

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/convoy-gitops/convoy/manifests/probe"
)

// pkoConditionAnnotation is Package Operator's per-object filter: a CEL expression; an object
// for which it is false is left out of the package.
const pkoConditionAnnotation = "package-operator.run/condition"

// pkoConditionMapAnnotation is Package Operator's mapping of an object's conditions onto its
// Package's (see parseConditionMap).
const pkoConditionMapAnnotation = "package-operator.run/condition-map"

// conditionNameRE is what a spec.filter.conditions name must look like (a CEL identifier).
var conditionNameRE = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)

// pkoFilter is Package Operator's spec.filter.
type pkoFilter struct {
	Conditions []struct {
		Name       string `json:"name"`
		Expression string `json:"expression"`
	} `json:"conditions"`
	Paths []struct {
		Glob       string `json:"glob"`
		Expression string `json:"expression"`
	} `json:"paths"`
}

// evalConditions evaluates spec.filter.conditions in order against the template context; the
// results are cond.NAME in later expressions. It returns nil when one fails (the problem is
// recorded, naming the condition and its expression).
func (m *manifest) evalConditions(tctx map[string]any, errs *errorList) map[string]bool {
	conds := map[string]bool{}
	ok := true
	for i, c := range m.filter.Conditions {
		at := m.lines.line(fmt.Sprintf("spec.filter.conditions[%d]", i))
		if !conditionNameRE.MatchString(c.Name) {
			errs.add(m.file, at, RuleFilter, "spec.filter.conditions[%d].name %q must match %s", i, c.Name, conditionNameRE)
			ok = false
			continue
		}
		if _, dup := conds[c.Name]; dup {
			errs.add(m.file, at, RuleFilter, "spec.filter.conditions[%d].name %q is used twice", i, c.Name)
			ok = false
			continue
		}
		v, err := probe.EvalFilter(c.Expression, tctx, nil)
		if err != nil {
			errs.add(m.file, at, RuleFilter, "condition %q: expression %q: %v", c.Name, c.Expression, err)
			ok = false
			continue
		}
		conds[c.Name] = v
	}
	if !ok {
		return nil
	}
	return conds
}

// excludedGlobs evaluates spec.filter.paths and returns the globs whose expression is false:
// the files they match are left out of the package.
func (m *manifest) excludedGlobs(tctx map[string]any, conds map[string]bool, errs *errorList) []string {
	var globs []string
	for i, p := range m.filter.Paths {
		at := m.lines.line(fmt.Sprintf("spec.filter.paths[%d]", i))
		v, err := probe.EvalFilter(p.Expression, tctx, conds)
		switch {
		case err != nil:
			errs.add(m.file, at, RuleFilter, "path filter %q: expression %q: %v", p.Glob, p.Expression, err)
		case !v:
			if _, err := path.Match(strings.ReplaceAll(p.Glob, "**", "*"), ""); err != nil {
				errs.add(m.file, at, RuleFilter, "path filter %q: %v", p.Glob, err)
				continue
			}
			globs = append(globs, p.Glob)
		}
	}
	return globs
}

// filterObjects applies the package's filters to its objects: files matched by an excluded
// path glob, and objects whose package-operator.run/condition annotation is false, are left
// out. It returns the objects kept and the set of those left out.
func filterObjects(m *manifest, tctx map[string]any, conds map[string]bool, objs []*object, errs *errorList) ([]*object, map[*object]bool) {
	globs := m.excludedGlobs(tctx, conds, errs)
	dropped := map[*object]bool{}
	kept := objs[:0:0]
	for _, o := range objs {
		if matchesAny(globs, renderedPath(o.file)) {
			dropped[o] = true
			continue
		}
		expr, ok := o.u.GetAnnotations()[pkoConditionAnnotation]
		if !ok {
			kept = append(kept, o)
			continue
		}
		v, err := probe.EvalFilter(expr, tctx, conds)
		switch {
		case err != nil:
			errs.add(o.file, o.fieldLine("metadata.annotations."+pkoConditionAnnotation), RuleFilter,
				"%s: annotation %s: expression %q: %v", describe(o.u), pkoConditionAnnotation, expr, err)
		case v:
			kept = append(kept, o)
		default:
			dropped[o] = true
		}
	}
	return kept, dropped
}

// renderedPath is the path of a file once rendered: templates lose their suffix.
func renderedPath(p string) string {
	return strings.TrimSuffix(p, templateExtension)
}

// matchesAny reports whether p matches one of globs, where "**" matches any number of path
// segments and the other patterns are path.Match's.
func matchesAny(globs []string, p string) bool {
	for _, g := range globs {
		if globMatch(strings.Split(g, "/"), strings.Split(p, "/")) {
			return true
		}
	}
	return false
}

// globMatch matches path segments against glob segments.
func globMatch(glob, segs []string) bool {
	if len(glob) == 0 {
		return len(segs) == 0
	}
	if glob[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if globMatch(glob[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	ok, _ := path.Match(glob[0], segs[0])
	return ok && globMatch(glob[1:], segs[1:])
}

// yamlSeparatorRE splits a file into documents as Package Operator does for fixtures.
var yamlSeparatorRE = regexp.MustCompile(`(?m)^---$`)

// withoutDocuments returns a file's text without the documents at the given indexes (counted
// among the file's objects), joined as Package Operator writes fixtures.
func withoutDocuments(data []byte, drop map[int]bool) []byte {
	var docs [][]byte
	for i, d := range yamlSeparatorRE.Split(string(bytes.Trim(data, "---\n")), -1) {
		if !drop[i] {
			docs = append(docs, bytes.TrimSpace([]byte(d)))
		}
	}
	return append(bytes.Join(docs, []byte("\n---\n")), '\n')
}
