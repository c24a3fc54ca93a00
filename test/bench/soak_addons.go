package bench

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Kinds of the soak's add-ons: each loads its package a different way.
const (
	// soakPlain is a management package of plain objects whose Widget has a CEL probe.
	soakPlain = "plain"
	// soakTemplates is a management package of Go templates, rendered in a child process.
	soakTemplates = "templates"
	// soakKustomize is a management package built with kustomize, whose generated ConfigMap
	// changes name with each revision (so that each revision prunes the last one's).
	soakKustomize = "kustomize"
	// soakPKO is a package in Package Operator's format.
	soakPKO = "pko"
	// soakHosted is a package in hosted-cluster phases, on the HostedClusters with an API server.
	soakHosted = "hosted"
)

// soakKinds lists the kinds, one add-on each.
var soakKinds = []string{soakPlain, soakTemplates, soakKustomize, soakPKO, soakHosted}

// soakAddon is one add-on of the soak: a HostedClusterPackage of the same name over the fleet.
type soakAddon struct {
	kind string
	// rev is the revision of its files at the head of the branch; broken says that revision
	// is a broken one (a failing probe or a template that does not parse).
	rev    int
	broken bool
}

// name is the add-on's HostedClusterPackage and folder name.
func (a *soakAddon) name() string { return "soak-" + a.kind }

// path is the add-on's folder in the repository.
func (a *soakAddon) path() string { return "soak/" + a.name() }

// canBreak reports whether the schedule may commit a broken revision of the add-on: the plain
// one (its probe fails) and the templates (they do not parse).
func (a *soakAddon) canBreak() bool { return a.kind == soakPlain || a.kind == soakTemplates }

// files returns the add-on's files at rev, broken or not.
func (a *soakAddon) files() (map[string]string, error) {
	p := a.path() + "/"
	switch a.kind {
	case soakPlain:
		objs := managementObjects("", "pl-", a.rev)
		if a.broken {
			// Note: the manifest's probe wants a size of at least 1: the revision applies
			// and never becomes available.
			_ = unstructured.SetNestedField(objs[4].Object, int64(0), "spec", "size")
		}
		docs, err := jsonDocuments(objs)
		return map[string]string{p + "manifest.yaml": renamedManifest(managementManifest, "fleet-addon", a.name()),
			p + "objects.yaml": docs}, err
	case soakHosted:
		docs, err := jsonDocuments(hostedObjectsAt("soak-hosted", a.rev)[:10])
		return map[string]string{p + "manifest.yaml": renamedManifest(hostedManifest, "hosted-addon", a.name()),
			p + "objects.yaml": docs}, err
	case soakTemplates:
		return map[string]string{p + "manifest.yaml": templatesManifest, p + "settings.yaml.gotmpl": templatesFile(a.rev, a.broken)}, nil
	case soakKustomize:
		return map[string]string{p + "manifest.yaml": kustomizeManifest, p + "kustomization.yaml": kustomization(a.rev),
			p + "account.yaml": kustomizeAccount}, nil
	case soakPKO:
		return map[string]string{p + "manifest.yaml": pkoManifest, p + "objects.yaml": pkoObjects(a.rev)}, nil
	}
	return nil, fmt.Errorf("soak: no add-on kind %q", a.kind)
}

// renamedManifest returns manifest with its metadata.name from changed to to.
func renamedManifest(manifest, from, to string) string {
	return strings.Replace(manifest, "metadata: {name: "+from+"}", "metadata: {name: "+to+"}", 1)
}

// jsonDocuments writes objs as a YAML stream of JSON documents.
func jsonDocuments(objs []*unstructured.Unstructured) (string, error) {
	var b strings.Builder
	for _, o := range objs {
		raw, err := json.Marshal(o.Object)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "---\n%s\n", raw)
	}
	return b.String(), nil
}

// templatesManifest declares one phase and a config of one field with a default, which the
// schedule's template edits change through the HostedClusterPackage.
const templatesManifest = `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: soak-templates}
spec:
  phases:
  - name: deploy
  config:
    openAPIV3Schema:
      type: object
      properties:
        greeting: {type: string, default: hello}
`

// templatesFile is the templates add-on's one template at rev: two ConfigMaps that read the
// config and the HostedCluster. The broken revision does not parse.
func templatesFile(rev int, broken bool) string {
	var b strings.Builder
	for i := range 2 {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: tm-settings-%d
  annotations: {convoy.dev/phase: deploy}
data:
  revision: "%d"
  greeting: {{ .config.greeting | quote }}
  cluster: {{ with .hostedCluster }}{{ .name | quote }}{{ else }}"none"{{ end }}
`, i, rev)
	}
	if broken {
		b.WriteString("  broken: {{ if }}\n")
	}
	return b.String()
}

// kustomizeManifest declares the kustomize add-on's two phases.
const kustomizeManifest = `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: soak-kustomize}
spec:
  phases:
  - name: rbac
  - name: deploy
`

// kustomizeAccount is the kustomize add-on's fixed resource.
const kustomizeAccount = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: kz-agent
  annotations: {convoy.dev/phase: rbac}
`

// kustomization is the kustomize add-on's kustomization at rev: a generated ConfigMap whose
// name has the hash of its data, so that each revision replaces the last one's.
func kustomization(rev int) string {
	return fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- account.yaml
labels:
- pairs: {app.kubernetes.io/name: soak-kustomize}
configMapGenerator:
- name: kz-settings
  literals:
  - revision=%d
  options:
    annotations: {convoy.dev/phase: deploy}
`, rev)
}

// pkoManifest is the Package Operator add-on's manifest.
const pkoManifest = `apiVersion: manifests.package-operator.run/v1alpha1
kind: PackageManifest
metadata:
  name: soak-pko
spec:
  scopes:
  - Namespaced
  phases:
  - name: rbac
  - name: deploy
`

// pkoObjects are the Package Operator add-on's objects at rev, with its phase annotations.
func pkoObjects(rev int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata:
  name: pko-agent
  annotations: {package-operator.run/phase: rbac}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: pko-settings
  annotations: {package-operator.run/phase: deploy}
data:
  revision: "%d"
`, rev)
}
