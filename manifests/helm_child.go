package manifests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	chartapi "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"

	"github.com/convoy-gitops/convoy/internal/procstat"
)

// chartRequest is a chart to render in the render process (renderRequest.Chart).
type chartRequest struct {
	// Path is where the chart sits in the package; outputs are named below it.
	Path string `json:"path"`
	// Files of a chart directory, paths relative to the chart; empty for an archive.
	Files []templateFile `json:"files,omitempty"`
	// Archive is a packaged chart (.tgz).
	Archive []byte `json:"archive,omitempty"`
	// Values are the user's values, merged over the chart's own.
	Values map[string]any `json:"values"`
	// ReleaseName and ReleaseNamespace are .Release.Name and .Release.Namespace.
	ReleaseName      string `json:"releaseName"`
	ReleaseNamespace string `json:"releaseNamespace"`
	// KubeVersion is .Capabilities.KubeVersion; Helm's default when empty.
	KubeVersion string `json:"kubeVersion,omitempty"`
	// APIVersions is .Capabilities.APIVersions, the target cluster's (sorted); Helm's built-in
	// set when empty.
	APIVersions []string `json:"apiVersions,omitempty"`
	// Name and Version, when set (a pulled chart), are what the chart's Chart.yaml must say.
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

// chartNotes is the suffix of the files Helm prints after an install rather than applies.
const chartNotes = "NOTES.txt"

// renderChart renders a chart as `helm template` does (dependencies resolved, values coalesced
// with the chart's, schema checked, templates rendered, CRDs of crds/ included), with no cluster:
// lookup returns nothing, DNS lookups return "", .Capabilities is built from KubeVersion. It
// emits one result per non-empty output, named by its path in the package.
func renderChart(req chartRequest, size int, emit func(renderEvent)) {
	emit(renderEvent{Start: req.Path})
	fail := func(err error) {
		emit(renderEvent{File: req.Path, Errors: []*Error{chartError(req.Path, err)}})
	}
	ch, err := loadChartRequest(req)
	if err != nil {
		fail(fmt.Errorf("loading the chart: %w", err))
		return
	}
	if req.Name != "" && (ch.Metadata.Name != req.Name || strings.TrimPrefix(ch.Metadata.Version, "v") != strings.TrimPrefix(req.Version, "v")) {
		fail(fmt.Errorf("the archive is chart %s version %s, not %s version %s", ch.Metadata.Name, ch.Metadata.Version, req.Name, req.Version))
		return
	}
	outputs, err := renderChartOutputs(req, ch)
	if err != nil {
		fail(err)
		return
	}
	names := make([]string, 0, len(outputs))
	for name := range outputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out := outputs[name]
		if size += len(out); len(out) > MaxFileSize || size > MaxPackageSize {
			emit(renderEvent{File: name, Errors: []*Error{{File: name, Rule: RuleLimit,
				Message: fmt.Sprintf("the chart's output is larger than %d bytes", min(MaxFileSize, MaxPackageSize))}}})
			return
		}
		emit(renderEvent{File: name, Output: []byte(out)})
	}
	peak, _ := procstat.PeakRSS(procstat.Self) // 0 when unknown
	emit(renderEvent{PeakRSS: peak})
}

// loadChartRequest loads the chart of req with Helm's loader, an archive expanding to at most
// MaxPackageSize (each file is bounded by the render process's memory and, once rendered, by
// MaxFileSize).
func loadChartRequest(req chartRequest) (*chart.Chart, error) {
	archive.MaxDecompressedChartSize = MaxPackageSize
	if len(req.Archive) > 0 {
		return loader.LoadArchive(bytes.NewReader(req.Archive))
	}
	files := make([]*archive.BufferedFile, len(req.Files))
	for i, f := range req.Files {
		files[i] = &archive.BufferedFile{Name: f.Path, Data: []byte(f.Text)}
	}
	return loader.LoadFiles(files)
}

// renderChartOutputs renders ch for req and returns the outputs, templates' and crds/', keyed by
// their path in the package.
func renderChartOutputs(req chartRequest, ch *chart.Chart) (map[string]string, error) {
	caps, err := chartCapabilities(req.KubeVersion, req.APIVersions)
	if err != nil {
		return nil, err
	}
	if v := ch.Metadata.KubeVersion; v != "" && !chartutil.IsCompatibleRange(v, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("the chart requires kubeVersion %s, which Kubernetes %s is not", v, caps.KubeVersion.Version)
	}
	values := req.Values
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependencies(ch, values); err != nil {
		return nil, fmt.Errorf("resolving the chart's dependencies: %w", err)
	}
	coalesced, err := util.CoalesceValues(ch, values)
	if err != nil {
		return nil, fmt.Errorf("merging values: %w", err)
	}
	if err := validateChartValues(ch, coalesced); err != nil {
		return nil, err
	}
	opts := common.ReleaseOptions{Name: req.ReleaseName, Namespace: req.ReleaseNamespace, Revision: 1, IsInstall: true}
	top, err := util.ToRenderValuesWithSchemaValidation(ch, values, opts, caps, true)
	if err != nil {
		return nil, err
	}
	rendered, err := engine.Engine{}.RenderWithContext(context.Background(), ch, top)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, text := range rendered {
		if strings.HasSuffix(name, chartNotes) || strings.TrimSpace(text) == "" {
			continue
		}
		out[chartOutputPath(req.Path, name)] = text
	}
	for _, crd := range ch.CRDObjects() {
		out[chartOutputPath(req.Path, crd.Filename)] = string(crd.File.Data)
	}
	return out, nil
}

// chartOutputPath names an output of the engine ("CHART/templates/x.yaml") by its path in the
// package ("PATH/templates/x.yaml").
func chartOutputPath(chartPath, name string) string {
	_, rest, _ := strings.Cut(name, "/")
	return path.Join(chartPath, rest)
}

// chartCapabilities is Helm's default .Capabilities with the Kubernetes version and API
// versions of the target cluster, when known.
func chartCapabilities(kubeVersion string, apiVersions []string) (*common.Capabilities, error) {
	caps := *common.DefaultCapabilities
	if len(apiVersions) > 0 {
		caps.APIVersions = common.VersionSet(apiVersions)
	}
	if kubeVersion == "" {
		return &caps, nil
	}
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("the environment's Kubernetes version %q: %w", kubeVersion, err)
	}
	caps.KubeVersion = *kv
	return &caps, nil
}

// validateChartValues checks values against the values.schema.json of the chart and of each
// subchart given values, as Helm does, except that a schema may not load anything: Helm would
// follow $ref to files and URLs, which a render may not reach.
func validateChartValues(ch chartapi.Charter, values map[string]any) error {
	c, ok := ch.(*chart.Chart)
	if !ok {
		return nil
	}
	var problems []string
	if len(c.Schema) > 0 {
		if err := validateAgainstSchema(values, c.Schema); err != nil {
			problems = append(problems, fmt.Sprintf("values do not match %s's values.schema.json: %v", c.Name(), err))
		}
	}
	for _, sub := range c.Dependencies() {
		if v, ok := values[sub.Name()].(map[string]any); ok {
			if err := validateChartValues(sub, v); err != nil {
				problems = append(problems, err.Error())
			}
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// schemaLoader refuses to load anything a schema refers to.
type schemaLoader struct{}

// Load refuses url.
func (schemaLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: a chart's schema may not refer to other files or URLs", url)
}

// validateAgainstSchema validates values against one JSON schema.
func validateAgainstSchema(values map[string]any, schemaJSON []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the schema cannot be used: %v", r)
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return fmt.Errorf("the schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(schemaLoader{})
	const url = "file:///values.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return err
	}
	s, err := c.Compile(url)
	if err != nil {
		return err
	}
	return s.Validate(values)
}

// helmErrorRE splits the Helm engine's "execution error at (CHART/templates/x.yaml:LINE:COL):
// MESSAGE" and "parse error at (CHART/templates/x.yaml:LINE): MESSAGE".
var helmErrorRE = regexp.MustCompile(`(?s)^(?:execution|parse) error at \(([^:)]+):(\d+)(?::\d+)?\): (.*)$`)

// chartError turns an error of the chart's loading or rendering into an Error at the template
// and line Helm names, when it names one.
func chartError(chartPath string, err error) *Error {
	if m := helmErrorRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[2])
		return &Error{File: chartOutputPath(chartPath, m[1]), Line: line, Rule: RuleTemplate, Message: strings.ReplaceAll(m[3], "\n", "; ")}
	}
	if m := templateErrorRE.FindStringSubmatch(err.Error()); m != nil {
		e := templateError(chartOutputPath(chartPath, m[1]), err)
		e.File = chartOutputPath(chartPath, m[1])
		return e
	}
	return &Error{File: chartPath, Rule: RuleChart, Message: strings.ReplaceAll(err.Error(), "\n", "; ")}
}
