package rolloutcontroller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// pkoAgentDigest is the digest manifest.lock.yaml pins the agent image to.
const pkoAgentDigest = "sha256:4444444444444444444444444444444444444444444444444444444444444444"

// pkoPackage is a multi-component Package Operator package with a lock file and conditional
// objects: its "agent" component reports the environment it was rendered for.
var pkoPackage = map[string]string{
	"pkg/manifest.yaml": `apiVersion: manifests.package-operator.run/v1alpha1
kind: PackageManifest
metadata: {name: fleet-agent}
spec:
  scopes: [Namespaced]
  components: {}
  phases: [{name: unused}]
`,
	"pkg/components/agent/manifest.yaml": `apiVersion: manifests.package-operator.run/v1alpha1
kind: PackageManifest
metadata: {name: agent}
spec:
  scopes: [Namespaced]
  phases: [{name: hosted, class: hosted-cluster}]
  images: [{name: agent, image: quay.io/example/agent:v1}]
  filter:
    conditions:
    - {name: isOpenShift, expression: has(environment.openShift)}
    paths:
    - {glob: openshift/**, expression: cond.isOpenShift}
`,
	"pkg/components/agent/manifest.lock.yaml": `apiVersion: manifests.package-operator.run/v1alpha1
kind: PackageManifestLock
spec:
  images:
  - {name: agent, image: quay.io/example/agent:v1, digest: ` + pkoAgentDigest + `}
`,
	"pkg/components/agent/env.yaml.gotmpl": `apiVersion: v1
kind: ConfigMap
metadata:
  name: agent-env
  namespace: default
  annotations: {package-operator.run/phase: hosted}
data:
  image: {{ .images.agent }}
  kubernetes: {{ .environment.kubernetes.version }}
  hostedCluster: {{ .environment.hyperShift.hostedCluster.metadata.name }}
  hcpNamespace: {{ .environment.hyperShift.hostedCluster.hostedClusterNamespace }}
  platform: {{ if cel "cond.isOpenShift" }}openshift{{ else }}kubernetes{{ end }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: agent-kubernetes-only
  namespace: default
  annotations:
    package-operator.run/phase: hosted
    package-operator.run/condition: "!cond.isOpenShift"
`,
	"pkg/components/agent/openshift/route.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: agent-openshift-only
  namespace: default
  annotations: {package-operator.run/phase: hosted}
`,
}

// TestPKOPackageRollsOutAcrossTheFleet rolls one component of a multi-component, conditional,
// lock-file Package Operator package out to two HostedClusters with a HostedClusterPackage, and
// checks that each hosted cluster got it rendered for the real environment: the management
// cluster's Kubernetes version from discovery and its own HostedCluster.
func TestPKOPackageRollsOutAcrossTheFleet(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	name := "pko-" + fleet.NameSuffix()
	ns := env.NewNamespace(t)
	repo := newSource(t, ns)
	_, err := repo.Commit("main", "add the agent package", pkoPackage)
	g.Expect(err).NotTo(HaveOccurred())
	f := &rolloutFleet{t: t, name: name, ns: ns, clusters: map[string]*fleet.HostedCluster{}}
	f.addClusters("a1:early", "a2:late")
	newHostedClusterPackage(t, name, ns, func(h *convoyv1alpha1.HostedClusterPackage) {
		h.Spec.Template.Spec.Component = "agent"
	})
	version, err := discovery.NewDiscoveryClientForConfigOrDie(env.Config).ServerVersion()
	g.Expect(err).NotTo(HaveOccurred())

	for _, hc := range f.clusters {
		g.Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(hc.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "agent-env"}, cm)).To(Succeed())
			g.Expect(cm.Data).To(Equal(map[string]string{
				"image":         "quay.io/example/agent@" + pkoAgentDigest,
				"kubernetes":    version.GitVersion,
				"hostedCluster": hc.Name,
				"hcpNamespace":  hc.HCPNamespace,
				"platform":      "kubernetes",
			}))
			g.Expect(hc.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "agent-kubernetes-only"}, &corev1.ConfigMap{})).To(Succeed())
		}).Should(Succeed(), "cluster %s", hc.Name)
		err := hc.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "agent-openshift-only"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the path filter leaves openshift/ out off OpenShift: %v", err)
	}
	g.Eventually(func(g Gomega) {
		pkgs := packagesOf(g, name)
		g.Expect(pkgs).To(HaveLen(2))
		for _, p := range pkgs {
			g.Expect(p.Spec.Component).To(Equal("agent"))
		}
	}).Should(Succeed())
}
