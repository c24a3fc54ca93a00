package dashboard

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// partitioner names the partition of a HostedCluster as the planner does, given the partitions
// the planner reported.
type partitioner struct {
	spec  *convoyv1alpha1.PartitionSpec
	known map[string]bool
}

// newPartitioner reads the partition spec and the planner's partitions.
func newPartitioner(spec *convoyv1alpha1.PartitionSpec, partitions []convoyv1alpha1.PartitionStatus) partitioner {
	p := partitioner{spec: spec, known: map[string]bool{}}
	for _, part := range partitions {
		p.known[part.Name] = true
	}
	return p
}

// partitionOf names the partition of a HostedCluster with labels: the label's value, "*" for a
// value a static order does not list when the order has "*", and "unknown" otherwise.
func (p partitioner) partitionOf(hcLabels map[string]string) string {
	if p.spec == nil {
		return convoyv1alpha1.UnknownPartition
	}
	value := hcLabels[p.spec.LabelKey]
	static := p.spec.Order.Static
	switch {
	case value == "" || value == convoyv1alpha1.UnlistedPartition:
		return convoyv1alpha1.UnknownPartition
	case static == nil && p.known[value]:
		return value
	case slices.Contains(static, value):
		return value
	case slices.Contains(static, convoyv1alpha1.UnlistedPartition):
		return convoyv1alpha1.UnlistedPartition
	}
	return convoyv1alpha1.UnknownPartition
}

// selected reports whether h's selector matches hc; an invalid selector matches nothing.
func selected(h *convoyv1alpha1.HostedClusterPackage, hc rollout.HostedCluster) bool {
	if h.Spec.HostedClusterSelector == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(h.Spec.HostedClusterSelector)
	return err == nil && sel.Matches(labels.Set(hc.Labels))
}
