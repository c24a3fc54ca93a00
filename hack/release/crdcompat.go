package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// loadCRDs reads every CustomResourceDefinition of the YAML files of dir, by name.
func loadCRDs(dir string) (map[string]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no CRD files", dir)
	}
	crds := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		crds[crd.Name] = crd
	}
	return crds, nil
}

// upgradeProblems lists what would break the objects users created with the previous CRDs once
// next is applied: a CRD or a served version removed, or a field required that was not, with
// no default to fill it in objects stored without it. Each problem names the CRD, the
// version, the field path and the rule.
func upgradeProblems(previous, next map[string]*apiextensionsv1.CustomResourceDefinition) []string {
	var problems []string
	for name, prev := range previous {
		crd, ok := next[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("CRD %s: removed; users' objects of it would be deleted", name))
			continue
		}
		for _, pv := range prev.Spec.Versions {
			v := findVersion(crd, pv.Name)
			switch {
			case pv.Served && (v == nil || !v.Served):
				problems = append(problems, fmt.Sprintf("CRD %s version %s: no longer served; clients of it would break", name, pv.Name))
			case v != nil && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil:
				var old *apiextensionsv1.JSONSchemaProps
				if pv.Schema != nil {
					old = pv.Schema.OpenAPIV3Schema
				}
				problems = append(problems, newRequired(name+" version "+v.Name, "", old, v.Schema.OpenAPIV3Schema)...)
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// findVersion returns the version name of crd, or nil.
func findVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// newRequired walks the schema next at path and returns the fields it requires that old (the
// same path in the previous schema, nil when it had none) did not, and that have no default.
// A field under a new optional object is not a problem: stored objects do not have the object.
func newRequired(crd, path string, old, next *apiextensionsv1.JSONSchemaProps) []string {
	if next == nil || old == nil {
		return nil
	}
	var problems []string
	for _, field := range next.Required {
		prop, hasProp := next.Properties[field]
		if slices.Contains(old.Required, field) || (hasProp && prop.Default != nil) {
			continue
		}
		problems = append(problems, fmt.Sprintf("CRD %s: %s.%s is required but was not, and has no default: "+
			"objects stored without it would fail validation on their next update; give it a default or make it optional",
			crd, path, field))
	}
	for field, prop := range next.Properties {
		oldProp, ok := old.Properties[field]
		if !ok {
			continue
		}
		problems = append(problems, newRequired(crd, path+"."+field, &oldProp, &prop)...)
	}
	if next.Items != nil && next.Items.Schema != nil && old.Items != nil {
		problems = append(problems, newRequired(crd, path+"[*]", old.Items.Schema, next.Items.Schema)...)
	}
	return problems
}
