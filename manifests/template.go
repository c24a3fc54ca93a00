package manifests

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// templateErrorRE splits text/template's "template: NAME:LINE[:COL]: MESSAGE" errors.
var templateErrorRE = regexp.MustCompile(`^template: ([^:]+):(\d+):(?:\d+:)? ?(.*)$`)

// undefinedFunctionRE finds the function a parse error is about.
var undefinedFunctionRE = regexp.MustCompile(`function "([^"]+)" not defined`)

// renderTemplates renders the package's templates for data, with conds the results of the
// named filter conditions (for the cel function), in a render process under budget b (see
// executeTemplates): every template is parsed as one set, so that define and include work across
// files, and each one whose base name does not start with "_" (those are helpers) is executed.
// It returns the outputs keyed by path without the .gotmpl suffix; it fails only when the render
// process cannot be started.
func renderTemplates(pf *packageFiles, data map[string]any, conds map[string]bool, b RenderBudget, errs *errorList) (map[string][]byte, error) {
	out := map[string][]byte{}
	req := renderRequest{Data: data, Conditions: conds, Size: pf.size}
	for _, p := range pf.paths {
		if !isTemplate(p) {
			continue
		}
		req.Templates = append(req.Templates, templateFile{Path: p, Text: string(pf.data[p])})
		if strings.HasPrefix(path.Base(p), "_") {
			continue
		}
		target := strings.TrimSuffix(p, templateExtension)
		if _, clash := pf.data[target]; clash {
			errs.add(p, 0, RuleTemplate, "renders to %s, which the package also holds", target)
			continue
		}
		req.Execute = append(req.Execute, p)
	}
	if len(req.Templates) == 0 {
		return out, nil
	}
	res, err := renderIsolated(req, b)
	if err != nil {
		return nil, fmt.Errorf("rendering the templates: %w", err)
	}
	errs.errs = append(errs.errs, res.errs...)
	for p, rendered := range res.outputs {
		pf.grow(len(rendered))
		out[strings.TrimSuffix(p, templateExtension)] = rendered
	}
	return out, nil
}

// templateError turns a text/template error into an Error at the file and line it names.
func templateError(p string, err error) *Error {
	e := &Error{File: p, Rule: RuleTemplate, Message: err.Error()}
	if m := templateErrorRE.FindStringSubmatch(err.Error()); m != nil {
		e.File, e.Message = m[1], m[3]
		e.Line, _ = strconv.Atoi(m[2])
	}
	if errors.Is(err, errOutputTooLarge) {
		e.Rule = RuleLimit
	}
	if m := undefinedFunctionRE.FindStringSubmatch(e.Message); m != nil && isForbidden(m[1]) {
		e.Rule = RuleForbiddenFunction
		e.Message = "function " + strconv.Quote(m[1]) + " is not allowed: templates may not read the host or be nondeterministic"
	}
	return e
}

// templateContext builds what templates see. For Package Operator packages it is Package
// Operator's context (.package.metadata with labels and annotations always present,
// .package.image, .config, .images, .dependencies, .environment with kubernetes always present
// and openShift, proxy and hyperShift only when known), plus convoy's .package.name,
// .package.namespace, .hostedCluster and .revision. convoy's own format sees the same, except
// that .environment.hyperShift is present (nil) without a HostedCluster, as it always was.
func templateContext(data TemplateData, config map[string]any, m *manifest) map[string]any {
	meta := ObjectMeta{Name: data.Package.Name, Namespace: data.Package.Namespace,
		Labels: nonNil(data.Package.Labels), Annotations: nonNil(data.Package.Annotations)}
	pkg := map[string]any{
		"name":      data.Package.Name,
		"namespace": data.Package.Namespace,
		"metadata":  toJSONMap(meta),
		"image":     data.packageImage,
	}
	env := toJSONMap(environmentFor(data))
	if _, ok := env["hyperShift"]; !ok && !m.pko {
		env["hyperShift"] = nil
	}
	var hostedCluster any
	if hs, ok := env["hyperShift"].(map[string]any); ok {
		if hc, ok := hs["hostedCluster"].(map[string]any); ok {
			hostedCluster = hc["metadata"]
		}
	}
	images := m.images
	if images == nil {
		images = map[string]any{}
	}
	return map[string]any{
		"config":        deepCopyJSON(config),
		"package":       pkg,
		"hostedCluster": hostedCluster,
		"revision":      data.Revision,
		"environment":   env,
		"images":        images,
		"dependencies":  map[string]any{},
	}
}

// typeEmptyPackageMetadata makes empty .package.metadata.labels and .annotations
// map[string]string, as Package Operator does, so that {{index .package.metadata.annotations
// "key"}} gives "" rather than "<no value>" when the Package has none. The context crosses to
// the render process as JSON, which loses that type; this restores it there.
func typeEmptyPackageMetadata(data map[string]any) {
	pkg, _ := data["package"].(map[string]any)
	meta, _ := pkg["metadata"].(map[string]any)
	if meta == nil {
		return
	}
	for _, k := range []string{"labels", "annotations"} {
		if m, _ := meta[k].(map[string]any); len(m) == 0 {
			meta[k] = map[string]string{}
		}
	}
}
