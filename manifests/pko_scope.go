package manifests

import (
	"slices"
	"strings"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// supportedScopes lists the scopes the manifest supports: its spec.scopes, or Namespaced
// alone for a convoy manifest that declares none.
func (m *manifest) supportedScopes() []string {
	if len(m.spec.Scopes) == 0 && !m.pko {
		return []string{convoyv1alpha1.ScopeNamespaced}
	}
	return m.spec.Scopes
}

// resolveScope returns the scope the package is installed with: the one asked for, which the
// package must support, else what Package Operator picks for a package installed in a
// namespace: Namespaced when supported, else Cluster. This is where a package's scope is
// checked; validation only checks that spec.scopes is well formed.
func (m *manifest) resolveScope(asked string, errs *errorList) string {
	supported := m.supportedScopes()
	switch {
	case asked != "" && !slices.Contains(supported, asked):
		errs.add(m.file, m.lines.line("spec.scopes"), RuleScope,
			"the package is installed with the %s scope but its spec.scopes lists %s", asked, scopeList(supported))
		return asked
	case asked != "":
		return asked
	case slices.Contains(supported, convoyv1alpha1.ScopeNamespaced) || len(supported) == 0:
		return convoyv1alpha1.ScopeNamespaced
	}
	return convoyv1alpha1.ScopeCluster
}

// scopeList names scopes in messages.
func scopeList(scopes []string) string {
	if len(scopes) == 0 {
		return "none"
	}
	return strings.Join(scopes, " and ")
}

// forScope returns data as a package of scope sees it. A Cluster-scoped package is rendered
// as Package Operator renders a ClusterPackage inside the hosted cluster: the package has no
// namespace, and a Package Operator package does not see the HostedCluster (the hosted
// cluster it runs in serves no HostedClusters: its .environment has no hyperShift).
func forScope(data TemplateData, scope string, pko bool) TemplateData {
	if scope != convoyv1alpha1.ScopeCluster || data.testCase {
		return data
	}
	data.Package.Namespace = ""
	if pko {
		data.HostedCluster = nil
		if data.Environment != nil && data.Environment.HyperShift != nil {
			env := *data.Environment
			env.HyperShift = nil
			data.Environment = &env
		}
	}
	return data
}

// placeForScope moves every phase of a Cluster-scoped package into the hosted cluster, as
// every object of a ClusterPackage lands in the cluster it is installed in.
func placeForScope(phases []Phase, scope string) {
	if scope != convoyv1alpha1.ScopeCluster {
		return
	}
	for i := range phases {
		phases[i].Class = convoyv1alpha1.ClassHostedCluster
	}
}
