// Package v1alpha1 holds convoy's API: the GitSource, Package, ObjectDeployment and
// HostedClusterPackage custom resources of the convoy.dev group, and the PackageManifest file
// format read from Git. It imports only apimachinery-level packages so that any client can use it.
//
// +kubebuilder:object:generate=true
// +groupName=convoy.dev
package v1alpha1
