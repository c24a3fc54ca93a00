package manifests

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Helm hook kinds that matter to convoy.
var (
	helmTestHooks = []string{"test", "test-success"}
	helmPreHooks  = []string{"pre-install", "pre-upgrade"}
	helmPostHooks = []string{"post-install", "post-upgrade"}
)

// builtinClusterScoped are the cluster-scoped kinds of Kubernetes; with the cluster-scoped
// CRDs of a chart they are the objects that get no namespace (see place).
var builtinClusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}: true, {Kind: "Node"}: true, {Kind: "PersistentVolume"}: true, {Kind: "ComponentStatus"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                        true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
}

// rbacKinds go to the RBAC phase.
var rbacKinds = map[schema.GroupKind]bool{
	{Kind: "ServiceAccount"}:                                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:               true,
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
}

// crdKind is the GroupKind of CustomResourceDefinitions.
var crdKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// place prepares the chart's objects for assignPhases: tests and delete or rollback hooks are
// dropped, install and upgrade hooks mapped to phases (or refused), the CRDs of crds/ kept from
// pruning unless the manifest opts in (and so are objects Helm keeps, helm.sh/resource-policy:
// keep), each object without a phase annotation given the phase
// of its kind, and namespaced objects of hosted-cluster phases without a namespace given the
// release's, as Helm would install them.
func (c *chartPackage) place(m *manifest, namespace string, objs []*object, errs *errorList) []*object {
	clusterScoped := chartClusterScoped(objs)
	out := objs[:0]
	for _, o := range objs {
		if !c.mapHook(m, o, errs) {
			continue
		}
		keep := o.u.GetAnnotations()[helmResourcePolicyAnnotation] == "keep"
		if keep || (c.fromCRDDir(o.file) && !c.spec.PruneCRDs) {
			setAnnotation(o.u, convoyv1alpha1.PruneAnnotation, "disabled")
		}
		phase := c.phaseOf(m, o.u)
		if _, ok := m.phases[phase]; ok && m.spec.Phases[m.phases[phase]].Class == convoyv1alpha1.ClassHostedCluster &&
			o.u.GetNamespace() == "" && !clusterScoped[o.u.GroupVersionKind().GroupKind()] {
			o.u.SetNamespace(namespace)
		}
		out = append(out, o)
	}
	return out
}

// phaseOf returns the phase an object names, setting the phase annotation by kind when it
// names none.
func (c *chartPackage) phaseOf(m *manifest, u *unstructured.Unstructured) string {
	ann := u.GetAnnotations()
	if p, ok := ann[convoyv1alpha1.PhaseAnnotation]; ok {
		return p
	}
	if p, ok := ann[convoyv1alpha1.PKOPhaseAnnotation]; ok {
		return p
	}
	p := c.kindPhase(m, u.GroupVersionKind().GroupKind())
	setAnnotation(u, convoyv1alpha1.PhaseAnnotation, p)
	return p
}

// kindPhase is the phase of objects of a kind by the manifest's spec.chart.phases, or the
// documented default: CRDs first, then namespaces, RBAC, the rest.
func (c *chartPackage) kindPhase(m *manifest, gk schema.GroupKind) string {
	ph := c.spec.Phases
	def := ph.Default
	if def == "" {
		def = convoyv1alpha1.ChartPhaseDeploy
		if _, ok := m.phases[def]; !ok && len(m.spec.Phases) > 0 {
			def = m.spec.Phases[len(m.spec.Phases)-1].Name
		}
	}
	pick := func(set, name string) string {
		if set != "" {
			return set
		}
		if _, ok := m.phases[name]; ok {
			return name
		}
		return def
	}
	switch {
	case gk == crdKind:
		return pick(ph.CRDs, convoyv1alpha1.ChartPhaseCRDs)
	case gk == schema.GroupKind{Kind: "Namespace"}:
		return pick(ph.Namespaces, convoyv1alpha1.ChartPhaseNamespaces)
	case rbacKinds[gk]:
		return pick(ph.RBAC, convoyv1alpha1.ChartPhaseRBAC)
	}
	return def
}

// mapHook handles an object's Helm hook annotation: it reports false for an object to drop
// (a test, a delete or rollback hook, a hook refused), and maps an install or upgrade hook to
// the phase spec.chart.hooks gives it, without Helm's hook annotations.
func (c *chartPackage) mapHook(m *manifest, o *object, errs *errorList) bool {
	value, ok := o.u.GetAnnotations()[helmHookAnnotation]
	if !ok {
		return true
	}
	hooks := strings.Split(value, ",")
	for i := range hooks {
		hooks[i] = strings.TrimSpace(hooks[i])
	}
	pre, post := anyOf(hooks, helmPreHooks), anyOf(hooks, helmPostHooks)
	switch {
	case anyOf(hooks, helmTestHooks):
		return false
	case !pre && !post:
		errs.warn(o.file, o.line, RuleChartHook, "%s is a Helm %s hook, which convoy does not run: dropped", describe(o.u), value)
		return false
	case c.spec.Hooks.Policy != convoyv1alpha1.ChartHooksPhases:
		errs.add(o.file, o.line, RuleChartHook, "%s is a Helm %s hook: set spec.chart.hooks.policy to %s to apply hooks in phases (hooks.pre, hooks.post), or leave it out of the chart's values",
			describe(o.u), value, convoyv1alpha1.ChartHooksPhases)
		return false
	}
	removeAnnotations(o.u, helmHookAnnotation, helmHookWeightAnnotation, helmHookDeletePolicyAnnotation)
	if _, has := o.u.GetAnnotations()[convoyv1alpha1.PhaseAnnotation]; has {
		return true
	}
	phase := c.spec.Hooks.Pre
	if phase == "" {
		phase = m.spec.Phases[0].Name
	}
	if !pre {
		if phase = c.spec.Hooks.Post; phase == "" {
			phase = m.spec.Phases[len(m.spec.Phases)-1].Name
		}
	}
	setAnnotation(o.u, convoyv1alpha1.PhaseAnnotation, phase)
	return true
}

// fromCRDDir reports whether an output came from the crds/ directory of the chart or of a
// subchart.
func (c *chartPackage) fromCRDDir(file string) bool {
	rel := file
	if c.path != "." {
		rel = strings.TrimPrefix(file, c.path+"/")
	}
	return strings.HasPrefix(rel, "crds/") || (strings.HasPrefix(rel, "charts/") && strings.Contains(rel, "/crds/"))
}

// chartClusterScoped returns the cluster-scoped kinds: Kubernetes' and those of the chart's
// CRDs of scope Cluster.
func chartClusterScoped(objs []*object) map[schema.GroupKind]bool {
	out := make(map[schema.GroupKind]bool, len(builtinClusterScoped))
	for gk := range builtinClusterScoped {
		out[gk] = true
	}
	for _, o := range objs {
		if o.u.GroupVersionKind().GroupKind() != crdKind {
			continue
		}
		scope, _, _ := unstructured.NestedString(o.u.Object, "spec", "scope")
		group, _, _ := unstructured.NestedString(o.u.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.u.Object, "spec", "names", "kind")
		if scope == "Cluster" {
			out[schema.GroupKind{Group: group, Kind: kind}] = true
		}
	}
	return out
}

// anyOf reports whether any of values is one of set.
func anyOf(values, set []string) bool {
	for _, v := range values {
		for _, s := range set {
			if v == s {
				return true
			}
		}
	}
	return false
}

// setAnnotation sets one annotation of u.
func setAnnotation(u *unstructured.Unstructured, key, value string) {
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[key] = value
	u.SetAnnotations(ann)
}
