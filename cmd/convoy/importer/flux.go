package importer

import (
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// gitRepositoryFieldsNotMapped are the fields of a GitRepository's spec a GitSource has no
// equivalent of.
var gitRepositoryFieldsNotMapped = []string{"ignore", "include", "verify", "recurseSubmodules", "proxySecretRef", "provider", "sparseCheckout"}

// fromGitRepository maps a Flux GitRepository to the GitSource of the same namespace and name.
func (r *Result) fromGitRepository(o *unstructured.Unstructured) *convoyv1alpha1.GitSource {
	gs := &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName()}}
	note := func(format string, args ...any) {
		r.notef("GitRepository", o.GetNamespace(), o.GetName(), format, args...)
	}
	gs.Spec.URL, _, _ = unstructured.NestedString(o.Object, "spec", "url")
	gs.Spec.Interval = duration(o, note, "spec", "interval")
	gs.Spec.Timeout = duration(o, note, "spec", "timeout")
	gs.Spec.Suspend, _, _ = unstructured.NestedBool(o.Object, "spec", "suspend")
	ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "ref")
	gs.Spec.Ref = convoyv1alpha1.GitRef{Branch: ref["branch"], Tag: ref["tag"], SemVer: ref["semver"]}
	if ref["commit"] != "" || ref["name"] != "" {
		note("spec.ref.commit and spec.ref.name have no GitSource equivalent: pin the commit on the Packages (spec.revision) instead")
	}
	if gs.Spec.Ref == (convoyv1alpha1.GitRef{}) {
		gs.Spec.Ref.Branch = "master" // Flux's default
		note("no spec.ref: Flux's default branch master is written")
	}
	if name, ok, _ := unstructured.NestedString(o.Object, "spec", "secretRef", "name"); ok {
		gs.Spec.SecretRef = &convoyv1alpha1.LocalObjectReference{Name: name}
		note("spec.secretRef %s is kept: check that its keys are those a GitSource reads (see the GitSource reference)", name)
	}
	for _, f := range gitRepositoryFieldsNotMapped {
		if _, ok := o.Object["spec"].(map[string]any)[f]; ok {
			note("spec.%s has no GitSource equivalent: left out", f)
		}
	}
	return gs
}

// duration reads a duration field, noting one that does not parse.
func duration(o *unstructured.Unstructured, note func(string, ...any), fields ...string) *metav1.Duration {
	s, ok, _ := unstructured.NestedString(o.Object, fields...)
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		note("%s %q is not a duration: left out", strings.Join(fields, "."), s)
		return nil
	}
	return &metav1.Duration{Duration: d}
}

// kustomizationFieldsNotMapped are the fields of a Kustomization's spec convoy does
// differently, with what to do instead.
var kustomizationFieldsNotMapped = map[string]string{
	"patches":            "put the patches in the package's kustomization.yaml",
	"images":             "put the image overrides in the package's kustomization.yaml",
	"postBuild":          "variable substitution: use the package's config and Go templates",
	"components":         "list the components in the package's kustomization.yaml",
	"dependsOn":          "order add-ons with the HostedClusterPackage's spec.dependsOn",
	"healthChecks":       "judge availability with availabilityProbes in the package's manifest.yaml",
	"healthCheckExprs":   "judge availability with availabilityProbes in the package's manifest.yaml",
	"decryption":         "convoy applies no SOPS-encrypted files: keep secrets out of the package",
	"serviceAccountName": "set the template's spec.serviceAccountName",
	"commonMetadata":     "put the labels and annotations in the package's kustomization.yaml",
	"namePrefix":         "put the prefix in the package's kustomization.yaml",
	"nameSuffix":         "put the suffix in the package's kustomization.yaml",
}

// kustomizationSet is the Kustomizations that apply one path of one source.
type kustomizationSet struct {
	source, path string
	items        []*unstructured.Unstructured
}

// fromKustomizations maps each set of Kustomizations that apply the same path of the same
// GitRepository to one HostedClusterPackage taking their objects over from Flux.
func (r *Result) fromKustomizations(objs []*unstructured.Unstructured) []*convoyv1alpha1.HostedClusterPackage {
	sets := map[string]*kustomizationSet{}
	for _, o := range objs {
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "sourceRef", "kind")
		if kind != "GitRepository" {
			r.notef("Kustomization", o.GetNamespace(), o.GetName(), "its source kind %s is not Git, the only source convoy reads: left out", kind)
			continue
		}
		source := sourceOf(o)
		path, _, _ := unstructured.NestedString(o.Object, "spec", "path")
		path = strings.TrimPrefix(strings.TrimPrefix(path, "./"), "/")
		key := source + "\x00" + path
		if sets[key] == nil {
			sets[key] = &kustomizationSet{source: source, path: path}
		}
		sets[key].items = append(sets[key].items, o)
	}
	var out []*convoyv1alpha1.HostedClusterPackage
	for _, key := range sortedKeys(sets) {
		out = append(out, r.fromKustomizationSet(sets[key]))
	}
	return out
}

// sourceOf returns "namespace/name" of a Kustomization's GitRepository.
func sourceOf(o *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(o.Object, "spec", "sourceRef", "name")
	ns, _, _ := unstructured.NestedString(o.Object, "spec", "sourceRef", "namespace")
	if ns == "" {
		ns = o.GetNamespace()
	}
	return ns + "/" + name
}

// fromKustomizationSet maps one set to a HostedClusterPackage named after the path.
func (r *Result) fromKustomizationSet(set *kustomizationSet) *convoyv1alpha1.HostedClusterPackage {
	ns, name, _ := strings.Cut(set.source, "/")
	first := set.items[0]
	h := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: hcpkgName(set.path)}}
	spec := &h.Spec.Template.Spec
	spec.SourceRef = convoyv1alpha1.SourceReference{Name: name, Namespace: ns}
	spec.Path = set.path
	spec.Interval = duration(first, func(string, ...any) {}, "spec", "interval")
	spec.Adopt = &convoyv1alpha1.AdoptSpec{From: []convoyv1alpha1.AdoptOwner{convoyv1alpha1.AdoptFromFlux}}
	var targets []string
	for _, o := range set.items {
		targets = append(targets, r.kustomizationTarget(o))
	}
	sort.Strings(targets)
	r.notef("HostedClusterPackage", "", h.Name,
		"replaces the Kustomizations of path %q of GitRepository %s, applying into %s: set spec.hostedClusterSelector "+
			"to select the HostedClusters of these HCP namespaces (it selects every HostedCluster as written), and "+
			"add a manifest.yaml (a PackageManifest with phases) and convoy.dev/phase annotations to the package",
		set.path, set.source, strings.Join(targets, ", "))
	return h
}

// kustomizationTarget returns where a Kustomization applies and notes what does not map.
func (r *Result) kustomizationTarget(o *unstructured.Unstructured) string {
	note := func(format string, args ...any) {
		r.notef("Kustomization", o.GetNamespace(), o.GetName(), format, args...)
	}
	spec, _ := o.Object["spec"].(map[string]any)
	for _, f := range sortedKeys(kustomizationFieldsNotMapped) {
		if _, ok := spec[f]; ok {
			note("spec.%s is not carried over: %s", f, kustomizationFieldsNotMapped[f])
		}
	}
	if _, ok := spec["kubeConfig"]; ok {
		note("spec.kubeConfig applies into a hosted cluster: give the package's phases class hosted-cluster, " +
			"convoy reaches each hosted cluster through its HCP namespace's kubeconfig")
	}
	target, _ := spec["targetNamespace"].(string)
	if target == "" {
		target = o.GetNamespace()
	}
	return target
}

// hcpkgName derives a HostedClusterPackage name from a package path.
func hcpkgName(path string) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", ".", "-").Replace(strings.Trim(path, "/")))
	if name == "" {
		name = "root"
	}
	if len(name) > 200 {
		name = name[:200]
	}
	return strings.Trim(name, "-")
}
