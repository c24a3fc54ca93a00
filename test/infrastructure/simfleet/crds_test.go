package simfleet_test

import (
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// convoyCRDNames are the CRDs of deploy/crds.
var convoyCRDNames = []string{
	"gitsources.convoy.dev",
	"hostedclusterpackages.convoy.dev",
	"manualpromotions.convoy.dev",
	"objectdeployments.convoy.dev",
	"packages.convoy.dev",
	"partitionapprovals.convoy.dev",
	"promotionapprovals.convoy.dev",
	"rolloutapprovals.convoy.dev",
}

// hyperShiftCRDNames are the CRDs simfleet embeds from HyperShift's API module.
var hyperShiftCRDNames = []string{
	"hostedclusters.hypershift.openshift.io",
	"hostedcontrolplanes.hypershift.openshift.io",
}

func crdNames(crds []*apiextensionsv1.CustomResourceDefinition) []string {
	names := make([]string, 0, len(crds))
	for _, crd := range crds {
		names = append(names, crd.Name)
	}
	return names
}

func TestCRDsAreConvoysThenHyperShifts(t *testing.T) {
	g := NewWithT(t)
	crds, err := simfleet.CRDs()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crdNames(crds)).To(Equal(append(append([]string{}, convoyCRDNames...), hyperShiftCRDNames...)))
	for _, crd := range crds {
		g.Expect(crd.Spec.Versions).NotTo(BeEmpty(), "%s decodes to a usable CRD", crd.Name)
	}
}

func TestConvoyCRDsLeaveOutHyperShift(t *testing.T) {
	g := NewWithT(t)
	crds, err := simfleet.ConvoyCRDs()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crdNames(crds)).To(Equal(convoyCRDNames))
}
