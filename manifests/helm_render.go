package manifests

import (
	"errors"
	"maps"
	"slices"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// renderObserver, when set (by a benchmark, never concurrently with loads), is given the result
// of each chart's render process.
var renderObserver func(*renderResult)

// chartTarget is the cluster a chart is rendered for: its .Capabilities, and which of the
// chart's objects the render gives (keep; nil keeps them all).
type chartTarget struct {
	kubeVersion string
	apiVersions *APIVersions
	keep        func(class string) bool
}

// render renders the chart and returns its objects, each with its phase annotation set. A
// chart is rendered for the environment of the cluster its objects land in: data.Environment
// (the hosted cluster's for a chart wholly in the hosted cluster, else the management
// cluster's). A chart split across both clusters, when data.HostedEnvironment is given, is
// rendered twice with the same values and release: the objects of its management phases come
// from a render with the management cluster's .Capabilities, those of its hosted-cluster
// phases from one with the hosted cluster's; problems of the second render are reported only
// when the first had none (they are mostly the same). It fails only when the render process
// cannot be started.
func (c *chartPackage) render(r chartRender) ([]*object, error) {
	env := environmentFor(r.data)
	management := chartTarget{kubeVersion: env.Kubernetes.Version, apiVersions: env.APIVersions}
	hostedEnv := r.data.HostedEnvironment
	if hostedEnv == nil || !r.m.splitsClasses() {
		return c.renderFor(r, management)
	}
	management.keep = func(class string) bool { return class != convoyv1alpha1.ClassHostedCluster }
	objs, err := c.renderFor(r, management)
	if err != nil {
		return nil, err
	}
	hosted := chartTarget{kubeVersion: hostedEnv.Kubernetes.Version, apiVersions: hostedEnv.APIVersions,
		keep: func(class string) bool { return class == convoyv1alpha1.ClassHostedCluster }}
	first := r.errs
	r.errs = &errorList{}
	hostedObjs, err := c.renderFor(r, hosted)
	if err != nil {
		return nil, err
	}
	if len(first.errs) == 0 {
		first.errs = append(first.errs, r.errs.errs...)
	}
	for _, w := range r.errs.warnings {
		if !slices.ContainsFunc(first.warnings, func(f *Error) bool { return f.Error() == w.Error() }) {
			first.warnings = append(first.warnings, w)
		}
	}
	return append(objs, hostedObjs...), nil
}

// renderFor renders the chart for one target cluster in a render process, shared with every
// load whose chart gets the same request when the load goes through a Cache (see
// Cache.renderChart), and returns the objects the target keeps.
func (c *chartPackage) renderFor(r chartRender, t chartTarget) ([]*object, error) {
	req, ok, err := c.request(r, t)
	if err != nil || !ok {
		return nil, err
	}
	res, err := r.data.renders.renderChart(renderRequest{Chart: req}, r.budget)
	if err != nil {
		return nil, errors.Join(errors.New("rendering the chart"), err)
	}
	if renderObserver != nil {
		renderObserver(res)
	}
	if len(res.errs) > 0 {
		r.errs.errs = append(r.errs.errs, res.errs...)
		return nil, nil
	}
	names := slices.Sorted(maps.Keys(res.outputs))
	dec := &decoder{errs: r.errs}
	var objs []*object
	for _, name := range names {
		if !r.pf.grow(len(res.outputs[name])) {
			r.errs.add(name, 0, RuleLimit, "the package with the chart's output is larger than %d bytes", MaxPackageSize)
			return nil, nil
		}
		objs = append(objs, dec.decodeFile(name, helmSeparators(res.outputs[name]))...)
	}
	objs = c.place(r.m, req.ReleaseNamespace, objs, r.errs)
	if t.keep == nil {
		return objs, nil
	}
	return slices.DeleteFunc(objs, func(o *object) bool { return !t.keep(r.m.classOf(o)) }), nil
}

// request reads the chart and gathers its values; it reports false when something was refused,
// and fails when a pulled chart cannot be fetched.
func (c *chartPackage) request(r chartRender, t chartTarget) (*chartRequest, bool, error) {
	before := len(r.errs.errs)
	req := &chartRequest{
		Path:             c.path,
		ReleaseName:      c.spec.ReleaseName,
		ReleaseNamespace: c.releaseNamespace(r),
		Values:           c.values(r),
		KubeVersion:      t.kubeVersion,
		APIVersions:      t.apiVersions.List(),
	}
	if req.ReleaseName == "" {
		req.ReleaseName = r.m.name
	}
	if err := c.readChart(r, req); err != nil {
		return nil, false, err
	}
	return req, len(r.errs.errs) == before, nil
}

// releaseNamespace is .Release.Namespace: spec.chart.namespace when set; else, for a chart
// wholly in the hosted cluster, Helm's default namespace; else the Package's namespace (the
// HCP namespace, where the objects of management phases land); else Helm's default.
//
// Note: the HCP namespace is a namespace of the management cluster and names nothing in a
// hosted cluster, so a chart wholly in the hosted cluster is given the namespace `helm
// install` gives a chart installed without --namespace. This also keeps the one input that
// differs for every HostedCluster out of the render: such a chart's render is shared by every
// cluster whose values and capabilities are equal (Cache.renderChart). A chart with a
// management phase keeps the HCP namespace: its objects land in it, so the namespace does reach
// the output, and each cluster gets its own render.
func (c *chartPackage) releaseNamespace(r chartRender) string {
	switch {
	case c.spec.Namespace != "":
		return c.spec.Namespace
	case r.m.hostedChart() || r.data.Package.Namespace == "":
		return defaultReleaseNamespace
	}
	return r.data.Package.Namespace
}

// splitsClasses reports whether the manifest has phases of both classes.
func (m *manifest) splitsClasses() bool {
	hosted, management := false, false
	for _, ph := range m.spec.Phases {
		if ph.Class == convoyv1alpha1.ClassHostedCluster {
			hosted = true
		} else {
			management = true
		}
	}
	return hosted && management
}

// classOf returns the class of the phase an object (placed by chartPackage.place) names; ""
// for a phase the manifest does not declare, which assignPhases reports.
func (m *manifest) classOf(o *object) string {
	i, ok := m.phases[o.u.GetAnnotations()[convoyv1alpha1.PhaseAnnotation]]
	if !ok {
		i, ok = m.phases[o.u.GetAnnotations()[convoyv1alpha1.PKOPhaseAnnotation]]
	}
	if !ok {
		return ""
	}
	return m.spec.Phases[i].Class
}
