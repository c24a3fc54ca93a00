package synccontroller

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/manifests"
)

// maxScopeMemo bounds the package directories whose placement is remembered.
const maxScopeMemo = 4096

// placement is where a package lands, as its manifest says: the scope it defaults to, and
// whether it is a chart package wholly in hosted-cluster phases.
type placement struct {
	scope       string
	hostedChart bool
	// chart and splitChart: a chart package, and one with phases of both classes.
	chart, splitChart bool
}

// scopeMemo remembers, by source, commit, directory and component, the placement of a
// package. Safe for concurrent use; the zero value is empty.
type scopeMemo struct {
	mu sync.Mutex
	m  map[string]placement
}

// get returns the remembered placement of key.
func (m *scopeMemo) get(key string) (placement, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.m[key]
	return p, ok
}

// put remembers the placement of key, forgetting everything when full.
func (m *scopeMemo) put(key string, p placement) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= maxScopeMemo {
		m.m = map[string]placement{}
	}
	m.m[key] = p
}

// installPlacement returns where the Package installs its package, as the render asks for
// it: the scope is spec.scope, else Cluster for a package that supports only the Cluster
// scope, else "" (Namespaced). The environment of the render depends on it, so the package's
// manifest is read first, once per commit of the directory.
func (r *PackageReconciler) installPlacement(ctx context.Context, s *scope) (placement, error) {
	obj := s.obj.(*convoyv1alpha1.Package)
	key := sourceKey(obj).String() + "\x00" + s.desiredID + "\x00" + obj.Spec.Path + "\x00" + obj.Spec.Component
	p, ok := r.scopes.get(key)
	if !ok {
		fsys, err := r.open(ctx, sourceKey(obj), s.desiredID)
		if err != nil {
			return placement{}, err
		}
		info, err := manifests.Inspect(fsys, obj.Spec.Path, obj.Spec.Component)
		if err != nil {
			return placement{}, nil //nolint:nilerr // the render reports what is wrong with the manifest
		}
		p = placement{hostedChart: info.HostedChart, chart: info.Chart, splitChart: info.SplitChart}
		if info.Scope == convoyv1alpha1.ScopeCluster {
			p.scope = info.Scope
		}
		r.scopes.put(key, p)
	}
	if obj.Spec.Scope != "" {
		p.scope = obj.Spec.Scope
	}
	return p, nil
}

// inHosted reports whether the package lands wholly in the hosted cluster: Cluster-scoped,
// or a chart in hosted-cluster phases only.
func (p placement) inHosted() bool {
	return p.scope == convoyv1alpha1.ScopeCluster || p.hostedChart
}

// renderEnvironment returns the environment a package is rendered for: the hosted cluster's,
// read from the hosted cluster itself, when the package is installed there (inHosted), else
// the management cluster's. Any renderer of a package bound for a hosted cluster asks it.
func (r *PackageReconciler) renderEnvironment(ctx context.Context, s *scope, inHosted bool) (*manifests.Environment, error) {
	switch {
	case !inHosted && r.Environment != nil:
		return r.Environment.Get(ctx)
	case !inHosted || r.HostedEnvironments == nil:
		return nil, nil
	case s.hostedCluster == nil:
		return nil, pass.Stallf(convoyv1alpha1.HostedClusterNotFoundReason,
			"the package is installed into the hosted cluster of namespace %s, but the namespace belongs to no hosted cluster (no HostedControlPlane)",
			s.obj.GetNamespace())
	}
	return r.HostedEnvironments.Get(ctx, s.obj.GetNamespace(), s.kubeconfigRef)
}

// checkConstraints stalls a package whose spec.constraints the environment it is installed in
// does not meet: nothing is applied (what an earlier revision applied stays), and the pass is
// looked at again when the environment may have changed (a cluster upgrade).
func checkConstraints(r *manifests.Rendered, env *manifests.Environment) error {
	if err := r.Constraints.Check(env); err != nil {
		return pass.StallAfterf(convoyv1alpha1.ConstraintsNotMetReason, environmentTTL,
			"%s; nothing is applied to this cluster", err.Error())
	}
	return nil
}

// statusWarnings returns a render's warnings as status.warnings holds them, bounded.
func statusWarnings(warnings manifests.Errors) []string {
	var out []string
	for _, w := range warnings {
		if len(out) == convoyv1alpha1.MaxStatusWarnings {
			break
		}
		out = append(out, pass.CutUTF8(w.Error(), 1024))
	}
	return out
}

// mappedReason is the reason of a mapped condition whose own reason the API would refuse.
const mappedReason = "Mapped"

// conditionReasonRE is what the API accepts as a condition's reason.
var conditionReasonRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// conditionMap is an object of the revision whose conditions the Package reports.
type conditionMap struct {
	// hosted is set for an object of a hosted-cluster phase.
	hosted   bool
	obj      *unstructured.Unstructured
	mappings []manifests.ConditionMapping
}

// conditionMapsOf lists the objects of a render that have condition maps.
func conditionMapsOf(r *manifests.Rendered) []conditionMap {
	var out []conditionMap
	for _, ph := range r.Phases {
		for i, mappings := range ph.ConditionMaps {
			out = append(out, conditionMap{hosted: ph.Class == convoyv1alpha1.ClassHostedCluster, obj: ph.Objects[i], mappings: mappings})
		}
	}
	return out
}

// mapConditions copies the mapped conditions of the revision's live objects onto the
// Package, as Package Operator does: a condition of the object that is current (no
// observedGeneration, or the object's generation) becomes the Package's condition of the
// destination type. Mapped conditions (types with a "/") no object reports any more are
// removed. An object not there yet maps nothing; a failed read keeps what was mapped.
func mapConditions(ctx context.Context, s *scope) {
	if s.target == nil || (len(s.conditionMaps) == 0 && !hasMappedConditions(s.obj)) {
		return
	}
	mapped := map[string]bool{}
	for _, cm := range s.conditionMaps {
		live, err := readLive(ctx, s, cm)
		if err != nil {
			return
		}
		for _, c := range currentConditions(live) {
			for _, m := range cm.mappings {
				if m.Source == c.Type {
					pass.Set(s.obj, m.Destination, c.Status, c.Reason, c.Message)
					mapped[m.Destination] = true
				}
			}
		}
	}
	for _, c := range s.obj.GetConditions() {
		if strings.Contains(c.Type, "/") && !mapped[c.Type] {
			pass.Delete(s.obj, c.Type)
		}
	}
}

// hasMappedConditions reports whether obj has a mapped condition (its type has a "/").
func hasMappedConditions(obj pass.Object) bool {
	for _, c := range obj.GetConditions() {
		if strings.Contains(c.Type, "/") {
			return true
		}
	}
	return false
}

// readLive reads the live object of a condition map; nil when it does not exist.
func readLive(ctx context.Context, s *scope, cm conditionMap) (*unstructured.Unstructured, error) {
	cl, ns := s.target.Management, cm.obj.GetNamespace()
	if cm.hosted {
		cl = s.target.Hosted
	} else if ns == "" {
		ns = s.target.Namespace
	}
	if cl == nil {
		return nil, errors.New("no client")
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(cm.obj.GroupVersionKind())
	err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: cm.obj.GetName()}, live)
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return live, nil
}

// currentConditions returns the conditions of live that are current.
func currentConditions(live *unstructured.Unstructured) []metav1.Condition {
	if live == nil {
		return nil
	}
	raw, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
	var out []metav1.Condition
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		c := metav1.Condition{}
		c.Type, _ = m["type"].(string)
		status, _ := m["status"].(string)
		c.Status = metav1.ConditionStatus(status)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		if c.Type == "" || (gen != 0 && gen != live.GetGeneration()) ||
			(c.Status != metav1.ConditionTrue && c.Status != metav1.ConditionFalse && c.Status != metav1.ConditionUnknown) {
			continue
		}
		if !conditionReasonRE.MatchString(c.Reason) {
			c.Reason = mappedReason
		}
		out = append(out, c)
	}
	return out
}

// packageRenderError classifies a Package's render failure as renderError does, but a scope
// the package does not support stalls with ScopeUnsupported: it is the Package's choice, not
// the package's content, that is wrong.
func packageRenderError(err error) error {
	var invalid manifests.Errors
	if errors.As(err, &invalid) && len(invalid) == 1 && invalid[0].Rule == manifests.RuleScope {
		return pass.Stallf(convoyv1alpha1.ScopeUnsupportedReason, "%w", err)
	}
	return renderError(err)
}
