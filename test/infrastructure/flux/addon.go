package flux

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// Object builds a Flux object (a GitRepository, a Kustomization) with spec.
func Object(apiVersion, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// AddonFiles is an add-on at path and one image, as a fleet on Flux keeps it: a Deployment and
// a ConfigMap that kustomize-controller builds with the kustomization.yaml and convoy loads with
// the manifest, for the takeovers from a real Flux (test/takeover, the fault harness).
func AddonFiles(path, image string) map[string]string {
	return map[string]string{
		path + "/manifest.yaml": `apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: addon}
spec:
  phases:
  - {name: deploy}
  availabilityProbes:
  # The test API server runs no controller that would report a rollout.
  - selector: {kind: {group: apps, kind: Deployment}}
    probes:
    - cel: {rule: "self.metadata.generation > 0", message: not applied}
`,
		path + "/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [deployment.yaml, settings.yaml]\n",
		path + "/settings.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: addon-settings, annotations: {convoy.dev/phase: deploy}}\ndata: {level: info}\n",
		path + "/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: addon, annotations: {convoy.dev/phase: deploy}}
spec:
  replicas: 2
  selector: {matchLabels: {app: addon}}
  template:
    metadata: {labels: {app: addon}}
    spec:
      containers:
      - {name: addon, image: "` + image + `"}
`,
	}
}
