package main

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/rollout/promotion"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/gittest"
)

// TestSectorsPrintsTheBusOfARepository pushes two records over HTTP to a real Git server (git
// http-backend, pushes allowed as a forge allows them) and reads them back as `convoy sectors`
// does from any machine: each management cluster of the sector map, the one that has not
// published included.
func TestSectorsPrintsTheBusOfARepository(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv, repo := gittest.NewServer(t)
	g.Expect(exec.Command("git", "--git-dir", repo.Dir, "config", "http.receivepack", "true").Run()).To(Succeed())
	head := gittest.Commit(t, repo, "sectors", map[string]string{"sectors.yaml": `apiVersion: convoy.dev/v1alpha1
kind: SectorMap
sectors:
- name: canary
  managementClusters: [mc-canary-1, mc-canary-2]
- name: eu
  managementClusters: [mc-eu-1]
`})
	url := srv.HTTPURL("repo")
	since := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, rec := range []promotion.Record{
		{ManagementCluster: "mc-canary-1", Sector: "canary", Key: "addon", Commits: []promotion.CommitRecord{
			{Commit: head, State: promotion.Completed, Partitions: 3, PartitionsDone: 3, Clusters: 10, ClustersDone: 10, Since: since}}},
		{ManagementCluster: "mc-canary-2", Sector: "canary", Key: "addon", Commits: []promotion.CommitRecord{
			{Commit: head, State: promotion.Progressing, Partitions: 3, PartitionsDone: 1, Clusters: 12, ClustersDone: 4, Since: since}}},
	} {
		data, err := rec.Encode()
		g.Expect(err).NotTo(HaveOccurred())
		ref := sources.PromotionRef(rec.Sector, rec.ManagementCluster, rec.Key)
		g.Expect(sources.PushPromotionRecord(ctx, sources.Remote{URL: url}, ref, data, since)).To(Succeed())
	}
	var out bytes.Buffer
	g.Expect(runSectors(ctx, &out, sectorsOptions{url: url, branch: "main", sectorMap: "sectors.yaml"})).To(Succeed())
	short := head[:7]
	g.Expect(out.String()).To(Equal(
		"SECTOR  MANAGEMENT CLUSTER  KEY    COMMIT   STATE         PROGRESS                        SINCE\n" +
			"canary  mc-canary-1         addon  " + short + "  Completed     3/3 partitions, 10/10 clusters  2026-12-01T10:00:00Z\n" +
			"canary  mc-canary-2         addon  " + short + "  Progressing   1/3 partitions, 4/12 clusters   2026-12-01T10:00:00Z\n" +
			"eu      mc-eu-1             addon  -        not reported  -                               -\n"))

	out.Reset()
	err := runSectors(ctx, &out, sectorsOptions{url: url, branch: "main", sectorMap: "missing.yaml"})
	g.Expect(err).To(MatchError(ContainSubstring("the sector map missing.yaml")))
}

func TestPromoteRefusesAnAbbreviatedCommit(t *testing.T) {
	g := NewWithT(t)
	err := runPromote(context.Background(), nil, nil, "addon", promoteOptions{commit: "abc1234", sector: "eu"})
	g.Expect(err).To(MatchError(ContainSubstring("not a full commit id")))
}
