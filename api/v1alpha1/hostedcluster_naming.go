package v1alpha1

import "strings"

// HostedControlPlaneNamespace returns the HCP namespace HyperShift creates for the HostedCluster
// namespace/name: "<namespace>-<name with '.' replaced by '-'>".
func HostedControlPlaneNamespace(namespace, name string) string {
	return namespace + "-" + strings.ReplaceAll(name, ".", "-")
}
