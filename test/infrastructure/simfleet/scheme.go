package simfleet

import (
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// NewScheme returns a scheme with the core kinds, CRDs, convoy's kinds and HyperShift's.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(convoyv1alpha1.AddToScheme(s))
	utilruntime.Must(hyperv1.AddToScheme(s))
	return s
}
