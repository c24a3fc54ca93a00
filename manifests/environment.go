package manifests

import (
	"encoding/json"
	"maps"
)

// Environment describes the clusters a package is rendered for, in Package Operator's shape:
// templates see it as .environment, and PKO filter expressions as the variable environment.
// Pointer fields are left out of the template context when nil, as Package Operator does.
type Environment struct {
	// Kubernetes is always present.
	Kubernetes KubernetesEnvironment `json:"kubernetes"`
	// OpenShift is set when the cluster is an OpenShift cluster (it has a ClusterVersion).
	OpenShift *OpenShiftEnvironment `json:"openShift,omitempty"`
	// Proxy is set when the cluster has a cluster-wide proxy configured.
	Proxy *ProxyEnvironment `json:"proxy,omitempty"`
	// HyperShift is set on a HyperShift management cluster; its HostedCluster is set when the
	// package is rendered for one. When either is nil, Load derives it from
	// TemplateData.HostedCluster.
	HyperShift *HyperShiftEnvironment `json:"hyperShift,omitempty"`
	// APIVersions are the API versions the cluster serves, read from its discovery: a chart
	// rendered for the cluster sees them as .Capabilities.APIVersions (nil: Helm's built-in
	// set). Not part of .environment; render cache keys hold its digest.
	APIVersions *APIVersions `json:"-"`
}

// apiVersionsDigest is the digest of env's API versions; "" for a nil env or set.
func (env *Environment) apiVersionsDigest() string {
	if env == nil {
		return ""
	}
	return env.APIVersions.Digest()
}

// KubernetesEnvironment is .environment.kubernetes.
type KubernetesEnvironment struct {
	// Version of the Kubernetes API server, as discovery reports it ("v1.31.2").
	Version string `json:"version"`
}

// OpenShiftEnvironment is .environment.openShift.
type OpenShiftEnvironment struct {
	// Version of OpenShift (the ClusterVersion's desired version).
	Version string `json:"version"`
	// Managed is set on managed OpenShift clusters.
	Managed *ManagedOpenShiftEnvironment `json:"managed,omitempty"`
}

// ManagedOpenShiftEnvironment is .environment.openShift.managed.
type ManagedOpenShiftEnvironment struct {
	// Data of the managed-cluster configuration.
	Data map[string]string `json:"data"`
}

// ProxyEnvironment is .environment.proxy; empty fields are left out.
type ProxyEnvironment struct {
	// HTTPProxy is the proxy for HTTP requests.
	HTTPProxy string `json:"httpProxy,omitempty"`
	// HTTPSProxy is the proxy for HTTPS requests.
	HTTPSProxy string `json:"httpsProxy,omitempty"`
	// NoProxy lists the hosts reached without a proxy.
	NoProxy string `json:"noProxy,omitempty"`
}

// HyperShiftEnvironment is .environment.hyperShift.
type HyperShiftEnvironment struct {
	// HostedCluster the package is rendered for; nil (null) when none.
	HostedCluster *HyperShiftHostedCluster `json:"hostedCluster"`
}

// HyperShiftHostedCluster is .environment.hyperShift.hostedCluster.
type HyperShiftHostedCluster struct {
	// Metadata of the HostedCluster.
	Metadata ObjectMeta `json:"metadata"`
	// HostedClusterNamespace is the HostedCluster's control-plane namespace.
	HostedClusterNamespace string `json:"hostedClusterNamespace"`
	// NodeSelector of the hosted control plane's pods, when the HostedCluster sets one.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// ObjectMeta is the metadata templates see of the Package and of the HostedCluster; labels and
// annotations are always present, empty maps when the object has none.
type ObjectMeta struct {
	// Name of the object.
	Name string `json:"name"`
	// Namespace of the object.
	Namespace string `json:"namespace"`
	// Labels of the object.
	Labels map[string]string `json:"labels"`
	// Annotations of the object.
	Annotations map[string]string `json:"annotations"`
}

// staticImage is what every image resolves to in a test.template case, as in Package Operator,
// so that fixtures do not change with the image digests.
const staticImage = "registry.package-operator.run/static-image"

// environmentFor returns the environment of data with .hyperShift derived from the
// HostedCluster when the caller gave none (its labels and annotations then always maps). A
// hyperShift given, as by a test case, is used as it is: labels and annotations it leaves out
// are null, as in Package Operator.
func environmentFor(data TemplateData) Environment {
	env := Environment{}
	if data.Environment != nil {
		env = *data.Environment
	}
	if data.HostedCluster != nil && (env.HyperShift == nil || env.HyperShift.HostedCluster == nil) {
		hc := data.HostedCluster
		env.HyperShift = &HyperShiftEnvironment{HostedCluster: &HyperShiftHostedCluster{
			Metadata: ObjectMeta{Name: hc.Name, Namespace: hc.Namespace,
				Labels: nonNil(hc.Labels), Annotations: nonNil(hc.Annotations)},
			HostedClusterNamespace: data.Package.Namespace,
		}}
	}
	return env
}

// toJSONMap converts v to the JSON-compatible map templates and CEL see. v must marshal to a
// JSON object.
func toJSONMap(v any) map[string]any {
	j, err := json.Marshal(v)
	if err != nil {
		panic(err) // only the plain structs of this file are converted
	}
	out := map[string]any{}
	if err := json.Unmarshal(j, &out); err != nil {
		panic(err)
	}
	return out
}

// nonNil returns m, or an empty map when m is nil.
func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}
