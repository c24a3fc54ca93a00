package rolloutcontroller

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// TestCommitThatLeavesThePackageAloneStartsNoRollout: a commit that changes another folder of
// the repository moves the GitSource but not the HostedClusterPackage's update revision; the
// next commit that changes the package's folder does.
func TestCommitThatLeavesThePackageAloneStartsNoRollout(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	repo := newSource(t, ns)
	name := "unchanged-" + fleet.NameSuffix()
	first, err := repo.Commit("main", "one", gatePackage(1, true, false))
	g.Expect(err).NotTo(HaveOccurred())
	newHostedClusterPackage(t, name, ns)

	updateCommit := func(g Gomega) string { return updateRevisionCommit(g, ns, name) }
	g.Eventually(updateCommit).Should(Equal(first))

	other, err := repo.Commit("main", "another add-on", map[string]string{"other/manifest.yaml": "changed: true\n"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) string {
		art, err := sources.GetArtifact(ctx, env.Client, sources.KeyFor(ns, sourceName))
		g.Expect(err).NotTo(HaveOccurred())
		return art.Commit
	}).Should(Equal(other))
	g.Consistently(updateCommit, 3*time.Second, 250*time.Millisecond).Should(Equal(first),
		"a commit outside the package's folder starts no rollout")

	next, err := repo.Commit("main", "two", gatePackage(2, true, false))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(updateCommit).Should(Equal(next))
}

// updateRevisionCommit returns the commit of the update revision of the HostedClusterPackage
// name, whose ControllerRevisions live in ns.
func updateRevisionCommit(g Gomega, ns, name string) string {
	st := getHCPkg(g, name).Status
	g.Expect(st.UpdateRevision).NotTo(BeEmpty())
	cr := &appsv1.ControllerRevision{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: st.UpdateRevision}, cr)).To(Succeed())
	var data revisionData
	g.Expect(json.Unmarshal(cr.Data.Raw, &data)).To(Succeed())
	return data.Commit
}
