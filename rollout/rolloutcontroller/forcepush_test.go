package rolloutcontroller

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// TestNewCommitAfterAForcePushIsRolledOut is the soak's force-push sequence for the update
// revision: the package's folder at revision 2 (commit P) is force-pushed back to P's parent F,
// which holds revision 1, then a new commit G brings revision 2's folder back. The update
// revision follows P, then F, then G: G's folder is P's, but P is not history of G, so
// unchangedCommit does not keep P.
func TestNewCommitAfterAForcePushIsRolledOut(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	repo := newSource(t, ns)
	name := "forcepush-" + fleet.NameSuffix()
	first, err := repo.Commit("main", "one", gatePackage(1, true, false))
	g.Expect(err).NotTo(HaveOccurred())
	newHostedClusterPackage(t, name, ns)
	updateCommit := func(g Gomega) string {
		st := getHCPkg(g, name).Status
		g.Expect(st.UpdateRevision).NotTo(BeEmpty())
		cr := &appsv1.ControllerRevision{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: st.UpdateRevision}, cr)).To(Succeed())
		var data revisionData
		g.Expect(json.Unmarshal(cr.Data.Raw, &data)).To(Succeed())
		return data.Commit
	}
	artifact := func(g Gomega) string {
		art, err := sources.GetArtifact(ctx, env.Client, sources.KeyFor(ns, sourceName))
		g.Expect(err).NotTo(HaveOccurred())
		return art.Commit
	}
	g.Eventually(updateCommit).Should(Equal(first))
	f, err := repo.Commit("main", "another add-on", map[string]string{"other/manifest.yaml": "changed: true\n"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(artifact).Should(Equal(f))
	p, err := repo.Commit("main", "two", gatePackage(2, true, false))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(updateCommit).Should(Equal(p))

	g.Expect(repo.ResetBranch("main", f)).To(Succeed())
	g.Eventually(artifact).Should(Equal(f))
	g.Eventually(updateCommit).Should(Equal(f), "the folder at F differs from P's")
	again, err := repo.Commit("main", "two", gatePackage(2, true, false))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(updateCommit).Should(Equal(again))
}
