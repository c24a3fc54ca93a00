package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/cmd/convoy/importer"
)

// TestImportedPKOHostedClusterPackagePlansAsPackageOperatorOrdersIt imports Package Operator's
// HostedClusterPackage with a static partition order and plans its first rollout on a fleet:
// the HostedClusters its selector matches, in its order (early, normal, late, then those of
// no group or another group last, as Package Operator documents), two at a time; those it does
// not select left out.
func TestImportedPKOHostedClusterPackagePlansAsPackageOperatorOrdersIt(t *testing.T) {
	g := NewWithT(t)
	f, err := os.Open("importer/testdata/pko-static-order.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	objs, err := importer.Decode(f)
	g.Expect(err).NotTo(HaveOccurred())
	imported := importer.Import(objs)
	g.Expect(imported.HostedClusterPackages).To(HaveLen(1))
	hcpkg := imported.HostedClusterPackages[0]
	// What the import's notes ask for: the package's source in Git.
	hcpkg.Spec.Template.Spec.SourceRef = convoyv1alpha1.SourceReference{Name: "addons", Namespace: "convoy-system"}
	hcpkg.Spec.Template.Spec.Path = "metrics-agent"

	const selected = "addons.example.com/metrics-agent"
	fleet := []client.Object{fixtureGitSource(), hcpkg}
	for _, hc := range []struct{ name, group string }{
		{"late-1", "late"}, {"normal-1", "normal"}, {"early-1", "early"}, {"other-1", "canary"},
		{"normal-2", "normal"}, {"none-1", ""}, {"early-2", "early"}, {"early-3", "early"},
	} {
		fleet = append(fleet, importedFleetCluster(hc.name, hc.group, map[string]string{selected: "enabled"}))
	}
	fleet = append(fleet, importedFleetCluster("unselected-1", "early", nil))
	c := fake.NewClientBuilder().WithScheme(newCLIScheme()).WithObjects(fleet...).
		WithStatusSubresource(&convoyv1alpha1.HostedClusterPackage{}).Build()

	var out bytes.Buffer
	opts := planOptions{output: "yaml", now: func() time.Time { return fixtureNow }}
	g.Expect(runPlan(context.Background(), c, &out, hcpkg.Name, opts)).To(Succeed())
	var plan struct {
		Batches []struct {
			Steps []struct {
				HostedCluster, Partition string
			} `json:"steps"`
		} `json:"batches"`
	}
	g.Expect(yaml.Unmarshal(out.Bytes(), &plan)).To(Succeed())
	var batches []string
	for _, b := range plan.Batches {
		var names []string
		for _, s := range b.Steps {
			names = append(names, s.HostedCluster)
		}
		batches = append(batches, fmt.Sprint(names))
	}
	g.Expect(batches).To(Equal([]string{
		"[clusters/early-1 clusters/early-2]", "[clusters/early-3]",
		"[clusters/normal-1 clusters/normal-2]",
		"[clusters/late-1]",
		"[clusters/none-1 clusters/other-1]",
	}), out.String())
}

// importedFleetCluster is an Available HostedCluster of the risk group group (none when
// empty) with labels.
func importedFleetCluster(name, group string, labels map[string]string) *hyperv1.HostedCluster {
	hc := fixtureHostedCluster(name, true)
	hc.Labels = map[string]string{}
	for k, v := range labels {
		hc.Labels[k] = v
	}
	if group != "" {
		hc.Labels["hypershift.openshift.io/risk-group"] = group
	}
	return hc
}
