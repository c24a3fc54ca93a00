package simfleet

import (
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Placeholders for the parts of a HostedCluster convoy never reads; the CRD requires them.
const (
	releaseImage   = "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64"
	pullSecretName = "pull-secret"
	baseDomain     = "fleet.convoy.test"
)

// newHostedCluster returns a minimal HostedCluster that passes the CRD's validation.
func newHostedCluster(in HostedClusterInput) *hyperv1.HostedCluster {
	return &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: in.Name, Labels: in.Labels},
		Spec: hyperv1.HostedClusterSpec{
			Release:    hyperv1.Release{Image: releaseImage},
			PullSecret: corev1.LocalObjectReference{Name: pullSecretName},
			Platform:   hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			Networking: hyperv1.ClusterNetworking{NetworkType: hyperv1.OVNKubernetes},
			Etcd:       managedEtcd(),
			Services:   routeServices(),
		},
	}
}

// newHostedControlPlane returns the HostedControlPlane HyperShift puts in the HCP namespace,
// annotated with the HostedCluster it belongs to.
func newHostedControlPlane(in HostedClusterInput, hcpNamespace string) *hyperv1.HostedControlPlane {
	return &hyperv1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   hcpNamespace,
			Name:        in.Name,
			Annotations: map[string]string{convoyv1alpha1.HostedClusterAnnotation: in.Namespace + "/" + in.Name},
		},
		Spec: hyperv1.HostedControlPlaneSpec{
			ReleaseImage: releaseImage,
			PullSecret:   corev1.LocalObjectReference{Name: pullSecretName},
			SSHKey:       corev1.LocalObjectReference{Name: "ssh-key"},
			IssuerURL:    "https://" + in.Name + "." + baseDomain,
			InfraID:      in.Name,
			DNS:          hyperv1.DNSSpec{BaseDomain: baseDomain},
			Platform:     hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			Networking:   hyperv1.ClusterNetworking{NetworkType: hyperv1.OVNKubernetes},
			Etcd:         managedEtcd(),
			Services:     routeServices(),
		},
	}
}

func managedEtcd() hyperv1.EtcdSpec {
	return hyperv1.EtcdSpec{
		ManagementType: hyperv1.Managed,
		Managed: &hyperv1.ManagedEtcdSpec{
			Storage: hyperv1.ManagedEtcdStorageSpec{Type: hyperv1.PersistentVolumeEtcdStorage},
		},
	}
}

func routeServices() []hyperv1.ServicePublishingStrategyMapping {
	services := []hyperv1.ServiceType{hyperv1.APIServer, hyperv1.OAuthServer, hyperv1.Konnectivity, hyperv1.Ignition}
	out := make([]hyperv1.ServicePublishingStrategyMapping, 0, len(services))
	for _, s := range services {
		out = append(out, hyperv1.ServicePublishingStrategyMapping{
			Service:                   s,
			ServicePublishingStrategy: hyperv1.ServicePublishingStrategy{Type: hyperv1.Route},
		})
	}
	return out
}

// availableCondition is the condition HyperShift sets on a HostedCluster.
func availableCondition(available bool, generation int64) metav1.Condition {
	c := metav1.Condition{
		Type:               string(hyperv1.HostedClusterAvailable),
		Status:             metav1.ConditionTrue,
		Reason:             "AsExpected",
		Message:            "The hosted control plane is available",
		ObservedGeneration: generation,
		LastTransitionTime: metav1.Now(),
	}
	if !available {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "WaitingForAvailable", "Simulated outage"
	}
	return c
}
