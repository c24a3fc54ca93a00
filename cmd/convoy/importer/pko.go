package importer

import (
	"encoding/json"
	"path"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Placeholders of what a PKO HostedClusterPackage does not say: where the package's files are
// in Git. They are no valid names, so that the API server refuses the object until they are
// filled in.
const (
	sourcePlaceholder = "TODO-gitsource-of-the-package-image-source"
	pathPlaceholder   = "TODO/"
)

// pkoHostedClusterPackage is the part of PKO's HostedClusterPackage (package-operator.run/v1alpha1,
// apis/core/v1alpha1/hostedclusterpackage_types.go) that maps.
type pkoHostedClusterPackage struct {
	Spec struct {
		Strategy struct {
			Instant        *struct{} `json:"instant"`
			RollingUpgrade *struct {
				MaxUnavailable int `json:"maxUnavailable"`
			} `json:"rollingUpgrade"`
		} `json:"strategy"`
		HostedClusterSelector *metav1.LabelSelector `json:"hostedClusterSelector"`
		Partition             *struct {
			LabelKey string `json:"labelKey"`
			Order    *struct {
				Static          []string  `json:"static"`
				AlphanumericAsc *struct{} `json:"alphanumericAsc"`
			} `json:"order"`
		} `json:"partition"`
		Template struct {
			Metadata struct {
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec struct {
				Image     string          `json:"image"`
				Config    json.RawMessage `json:"config"`
				Component string          `json:"component"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// fromPKO maps a PKO HostedClusterPackage to convoy's of the same name: selector, partitions
// and strategy carry over; the package image does not, convoy reads the package from Git.
func (r *Result) fromPKO(o *unstructured.Unstructured) *convoyv1alpha1.HostedClusterPackage {
	note := func(format string, args ...any) { r.notef("HostedClusterPackage", "", o.GetName(), format, args...) }
	var in pkoHostedClusterPackage
	raw, _ := json.Marshal(o.Object)
	if err := json.Unmarshal(raw, &in); err != nil {
		note("unreadable (%v): left out", err)
	}
	h := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: o.GetName()}}
	h.Spec.HostedClusterSelector = in.Spec.HostedClusterSelector
	mapPKOPartition(h, &in, note)
	if ru := in.Spec.Strategy.RollingUpgrade; ru != nil {
		h.Spec.Strategy.RollingUpgrade = &convoyv1alpha1.RollingUpgradeStrategy{MaxUnavailable: ptrTo(intstr.FromInt(ru.MaxUnavailable))}
	} else {
		h.Spec.Strategy.Instant = &convoyv1alpha1.InstantStrategy{}
	}
	t := in.Spec.Template
	h.Spec.Template.Metadata = convoyv1alpha1.PackageTemplateMetadata{Labels: t.Metadata.Labels, Annotations: t.Metadata.Annotations}
	spec := &h.Spec.Template.Spec
	spec.Component = t.Spec.Component
	if len(t.Spec.Config) > 0 && string(t.Spec.Config) != "null" {
		spec.Config = &runtime.RawExtension{Raw: t.Spec.Config}
	}
	spec.SourceRef = convoyv1alpha1.SourceReference{Name: sourcePlaceholder}
	spec.Path = pathPlaceholder + imageName(t.Spec.Image)
	spec.Adopt = &convoyv1alpha1.AdoptSpec{From: []convoyv1alpha1.AdoptOwner{convoyv1alpha1.AdoptFromPackageOperator}}
	note("its package image %s is not read by convoy: set spec.template.spec.sourceRef to the GitSource of the repository "+
		"the image is built from and spec.template.spec.path to the package's directory there (the one `kubectl package build` reads); "+
		"convoy loads Package Operator's manifest.yaml as it is", t.Spec.Image)
	return h
}

// mapPKOPartition carries the partition over. PKO puts HostedClusters without the label, and
// values the static order does not name, last; convoy's order is written as PKO's.
func mapPKOPartition(h *convoyv1alpha1.HostedClusterPackage, in *pkoHostedClusterPackage, note func(string, ...any)) {
	p := in.Spec.Partition
	if p == nil {
		return
	}
	h.Spec.Partition = &convoyv1alpha1.PartitionSpec{LabelKey: p.LabelKey}
	switch {
	case p.Order != nil && len(p.Order.Static) > 0:
		h.Spec.Partition.Order.Static = p.Order.Static
		for _, v := range p.Order.Static {
			if v == "*" {
				note("the static order's catch-all * is kept: check with `convoy plan` that convoy orders those clusters as PKO did")
			}
		}
	default:
		h.Spec.Partition.Order.AlphanumericAsc = &convoyv1alpha1.AlphanumericAscOrder{}
	}
}

// imageName returns the repository name of an image reference, without registry, tag or
// digest: a guess at the package's directory name.
func imageName(image string) string {
	image, _, _ = strings.Cut(image, "@")
	base := path.Base(image)
	if i := strings.LastIndex(base, ":"); i >= 0 {
		base = base[:i]
	}
	return base
}

// ptrTo returns a pointer to v.
func ptrTo[T any](v T) *T { return &v }
