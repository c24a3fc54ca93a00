package manifests

import (
	"bytes"
	"errors"
	"io/fs"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/ignore"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Rules of chart packages.
const (
	// RuleChart: the chart cannot be read, its values are refused or it fails to render.
	RuleChart Rule = "chart"
	// RuleChartHook: the chart has install or upgrade hooks and the manifest maps none.
	RuleChartHook Rule = "chart-hook"
)

// Helm's annotations and files.
const (
	helmHookAnnotation             = "helm.sh/hook"
	helmHookWeightAnnotation       = "helm.sh/hook-weight"
	helmHookDeletePolicyAnnotation = "helm.sh/hook-delete-policy"
	helmResourcePolicyAnnotation   = "helm.sh/resource-policy"
	chartArchiveExtension          = ".tgz"
	// defaultReleaseNamespace is .Release.Namespace when neither the manifest nor the Package
	// give one (convoy render without --namespace).
	defaultReleaseNamespace = "default"
)

// chartPackage is the chart of a package being loaded: its manifest entry, cleaned.
type chartPackage struct {
	spec *convoyv1alpha1.PackageManifestChart
	// path is the chart's path in the package, or the name of a pulled chart's archive.
	path        string
	valuesFiles []string
	// pull is set for a chart pulled from a repository.
	pull *ChartRef
}

// newChartPackage returns the chart the manifest declares, or nil when it declares none or the
// declaration is refused (recorded in errs).
func newChartPackage(m *manifest, kustomized bool, errs *errorList) *chartPackage {
	c := m.spec.Chart
	if c == nil {
		return nil
	}
	at := m.lines.line("spec.chart")
	p := path.Clean(c.Path)
	switch {
	case (c.Path == "") == (c.Repository == ""):
		errs.add(m.file, at, RuleInvalidManifest, "spec.chart needs exactly one of path (a chart in the package) and repository (a chart pulled by version and digest)")
	case c.Repository != "":
		return newPulledChart(m, at, c, errs)
	case path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../"):
		errs.add(m.file, at, RuleInvalidManifest, "spec.chart.path %q must name a directory or file inside the package", c.Path)
	case kustomized:
		errs.add(m.file, at, RuleInvalidManifest, "a chart package may not have a root kustomization")
	case c.Hooks.Policy != "" && c.Hooks.Policy != convoyv1alpha1.ChartHooksRefuse && c.Hooks.Policy != convoyv1alpha1.ChartHooksPhases:
		errs.add(m.file, at, RuleInvalidManifest, "spec.chart.hooks.policy %q: want %s or %s", c.Hooks.Policy,
			convoyv1alpha1.ChartHooksRefuse, convoyv1alpha1.ChartHooksPhases)
	default:
		return &chartPackage{spec: c, path: p, valuesFiles: cleanPaths(c.ValuesFiles)}
	}
	return nil
}

// defaultChartPhases are the phases of a chart package that declares none, in the chart's class.
func defaultChartPhases(c *convoyv1alpha1.PackageManifestChart) []convoyv1alpha1.PackageManifestPhase {
	names := []string{convoyv1alpha1.ChartPhaseCRDs, convoyv1alpha1.ChartPhaseNamespaces,
		convoyv1alpha1.ChartPhaseRBAC, convoyv1alpha1.ChartPhaseDeploy}
	phases := make([]convoyv1alpha1.PackageManifestPhase, len(names))
	for i, n := range names {
		phases[i] = convoyv1alpha1.PackageManifestPhase{Name: n, Class: c.Class}
	}
	return phases
}

// hostedChart reports whether the manifest declares a chart and every phase is of the
// hosted-cluster class (the chart's class when the manifest declares no phases).
func (m *manifest) hostedChart() bool {
	if m.spec.Chart == nil || len(m.spec.Phases) == 0 {
		return false
	}
	for _, ph := range m.spec.Phases {
		if ph.Class != convoyv1alpha1.ClassHostedCluster {
			return false
		}
	}
	return true
}

// dropChartFiles removes the chart's own files from the package's: they are read and rendered as
// the chart's, not decoded as the package's objects.
func (c *chartPackage) dropChartFiles(pf *packageFiles) {
	pf.paths = slices.DeleteFunc(pf.paths, func(p string) bool {
		if c.inChart(p) {
			delete(pf.data, p)
			return true
		}
		return false
	})
}

// inChart reports whether a package path belongs to the chart.
func (c *chartPackage) inChart(p string) bool {
	if c.pull != nil || isRootFile(p, manifestFile, manifestFileAlt) || slices.Contains(c.valuesFiles, p) {
		return false
	}
	return c.path == "." || p == c.path || strings.HasPrefix(p, c.path+"/")
}

// objectFiles returns the package's files without the values files, which are not objects.
func (c *chartPackage) objectFiles(pf *packageFiles) *packageFiles {
	if c == nil {
		return pf
	}
	out := &packageFiles{data: pf.data, size: pf.size}
	for _, p := range pf.paths {
		if !slices.Contains(c.valuesFiles, strings.TrimSuffix(p, templateExtension)) && !slices.Contains(c.valuesFiles, p) {
			out.paths = append(out.paths, p)
		}
	}
	return out
}

// chartRender is what rendering a chart needs besides the chart.
type chartRender struct {
	fsys     fs.FS
	dir      string
	pf       *packageFiles
	m        *manifest
	data     TemplateData
	config   map[string]any
	rendered map[string][]byte
	budget   RenderBudget
	errs     *errorList
}

// values merges, in order: the manifest's spec.chart.values (the package's defaults), the
// Package's config (defaulted by the manifest's schema) and the values files (per-cluster
// values). The chart's own values.yaml lies under them all, merged in the render process.
func (c *chartPackage) values(r chartRender) map[string]any {
	out := map[string]any{}
	if v := c.spec.Values; v != nil && len(v.Raw) > 0 {
		if err := yaml.Unmarshal(v.Raw, &out); err != nil {
			r.errs.add(r.m.file, r.m.lines.line("spec.chart.values"), RuleInvalidManifest, "spec.chart.values: %v", err)
		}
	}
	out = mergeValues(out, deepCopyJSON(r.config))
	for _, f := range c.valuesFiles {
		text, ok := r.pf.data[f]
		if isTemplate(f) {
			// A template that failed was reported; its text is no values.
			text, ok = r.rendered[strings.TrimSuffix(f, templateExtension)]
			if _, exists := r.pf.data[f]; exists && !ok {
				continue
			}
		}
		if !ok {
			r.errs.add(r.m.file, r.m.lines.line("spec.chart.valuesFiles"), RuleInvalidManifest, "values file %q is not a YAML file or template of the package", f)
			continue
		}
		var v map[string]any
		if err := yaml.Unmarshal(text, &v); err != nil {
			r.errs.add(f, 0, RuleInvalidYAML, "values: %v", err)
			continue
		}
		out = mergeValues(out, v)
	}
	return out
}

// mergeValues merges src over dst, recursing into maps; src's other values replace dst's.
func mergeValues(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// readChart reads the chart into req: a packaged chart as it is (the render process expands
// it, under its limits), a chart directory file by file, as Helm does (.helmignore applied,
// hidden files included), through the package's confined filesystem.
func (c *chartPackage) readChart(r chartRender, req *chartRequest) error {
	if c.pull != nil {
		return c.pullChart(r, req)
	}
	full := path.Join(r.dir, c.path)
	info, err := fs.Stat(r.fsys, full)
	if err != nil {
		r.errs.add(c.path, 0, RuleChart, "the chart cannot be read: %v", err)
		return nil
	}
	if !info.IsDir() {
		if !strings.HasSuffix(c.path, chartArchiveExtension) {
			r.errs.add(c.path, 0, RuleChart, "a chart is a directory or a %s archive", chartArchiveExtension)
			return nil
		}
		c.readArchive(r, full, req)
		return nil
	}
	rules := chartIgnoreRules(r.fsys, full, c.path, r.errs)
	err = fs.WalkDir(r.fsys, full, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return c.readChartFile(r, rules, full, p, d, req)
	})
	if err != nil && !errors.Is(err, errStopWalk) {
		r.errs.add(c.path, 0, RuleChart, "the chart cannot be read: %v", err)
	}
	return nil
}

// readArchive reads a packaged chart.
func (c *chartPackage) readArchive(r chartRender, full string, req *chartRequest) {
	data, err := fs.ReadFile(r.fsys, full)
	switch {
	case err != nil:
		r.errs.add(c.path, 0, RuleChart, "the chart cannot be read: %v", err)
	case len(data) > MaxFileSize:
		r.errs.add(c.path, 0, RuleLimit, "the chart archive is larger than %d bytes", MaxFileSize)
	case !r.pf.grow(len(data)):
		r.errs.add(c.path, 0, RuleLimit, "the package is larger than %d bytes", MaxPackageSize)
	default:
		req.Archive = data
	}
}

// readChartFile reads one file of a chart directory into req, unless .helmignore ignores it.
func (c *chartPackage) readChartFile(r chartRender, rules *ignore.Rules, full, p string, d fs.DirEntry, req *chartRequest) error {
	rel := relPath(full, p)
	if rel == "." {
		return nil
	}
	info, err := d.Info()
	if err != nil {
		return err
	}
	if rules.Ignore(rel, info) {
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	}
	if d.IsDir() {
		return nil
	}
	at := path.Join(c.path, rel)
	if len(req.Files) >= MaxFiles {
		r.errs.add(at, 0, RuleLimit, "the chart has more than %d files", MaxFiles)
		return errStopWalk
	}
	data, err := fs.ReadFile(r.fsys, p)
	var escape *SymlinkEscapeError
	switch {
	case errors.As(err, &escape):
		r.errs.add(at, 0, RuleSymlinkOutside, "%v", escape)
		return nil
	case err != nil:
		r.errs.add(at, 0, RuleChart, "cannot read: %v", err)
		return nil
	case len(data) > MaxFileSize:
		r.errs.add(at, 0, RuleLimit, "file is larger than %d bytes", MaxFileSize)
		return nil
	case !r.pf.grow(len(data)):
		r.errs.add(at, 0, RuleLimit, "the package is larger than %d bytes", MaxPackageSize)
		return errStopWalk
	}
	req.Files = append(req.Files, templateFile{Path: rel, Text: string(data)})
	return nil
}

// chartIgnoreRules reads the chart directory's .helmignore, with Helm's default rules.
func chartIgnoreRules(fsys fs.FS, full, at string, errs *errorList) *ignore.Rules {
	rules := ignore.Empty()
	if data, err := fs.ReadFile(fsys, path.Join(full, ignore.HelmIgnore)); err == nil {
		parsed, err := ignore.Parse(bytes.NewReader(data))
		if err != nil {
			errs.add(path.Join(at, ignore.HelmIgnore), 0, RuleChart, "%v", err)
		} else {
			rules = parsed
		}
	}
	rules.AddDefaults()
	return rules
}

// helmSeparators makes the document separators Helm accepts ("---" at the start of a line,
// whatever follows it: "---# comment") separators for convoy's decoder, which wants a blank
// after "---", by inserting one; lines keep their numbers.
func helmSeparators(data []byte) []byte {
	var out []byte
	for pos := 0; pos < len(data); {
		next := len(data)
		if end := bytes.IndexByte(data[pos:], '\n'); end >= 0 {
			next = pos + end + 1
		}
		line := data[pos:next]
		if len(line) > 3 && bytes.HasPrefix(line, []byte("---")) && !strings.ContainsRune(" \t\r\n", rune(line[3])) {
			if out == nil {
				out = append(make([]byte, 0, len(data)+16), data[:pos]...)
			}
			out = append(append(out, "--- "...), line[3:]...)
		} else if out != nil {
			out = append(out, line...)
		}
		pos = next
	}
	if out == nil {
		return data
	}
	return out
}
