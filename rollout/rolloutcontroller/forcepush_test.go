package rolloutcontroller

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

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
	updateCommit := func(g Gomega) string { return updateRevisionCommit(g, ns, name) }
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
