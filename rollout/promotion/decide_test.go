package promotion

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// commitN returns a distinct full commit id.
func commitN(n int) string { return fmt.Sprintf("%040x", n+1) }

func testMap() SectorMap {
	return SectorMap{APIVersion: "convoy.dev/v1alpha1", Kind: SectorMapKind, Sectors: []Sector{
		{Name: "canary", ManagementClusters: []string{"mc-c1", "mc-c2"}},
		{Name: "eu", ManagementClusters: []string{"mc-eu1"}},
	}}
}

func record(mc, sector string, commits ...CommitRecord) Record {
	return Record{Version: RecordVersion, ManagementCluster: mc, Sector: sector, Key: "addon", Commits: commits}
}

func done(commit string, at time.Time) CommitRecord {
	return CommitRecord{Commit: commit, State: Completed, StartedAt: at.Add(-time.Hour), Since: at}
}

func TestDecide(t *testing.T) {
	a, b, c := commitN(1), commitN(2), commitN(3)
	soak := time.Hour
	cases := []struct {
		name    string
		records map[string]Record
		current string
		manual  map[string]bool
		want    string
		byHand  bool
		nextAt  time.Time
	}{
		{name: "nothing reported promotes nothing", want: ""},
		{name: "one canary cluster done is not enough",
			records: map[string]Record{"mc-c1": record("mc-c1", "canary", done(c, t0.Add(-2*time.Hour)))}},
		{name: "both done and soaked promotes the head",
			records: map[string]Record{"mc-c1": record("mc-c1", "canary", done(c, t0.Add(-2*time.Hour))),
				"mc-c2": record("mc-c2", "canary", done(c, t0.Add(-time.Hour)))}, want: c},
		{name: "the soak counts from the last cluster",
			records: map[string]Record{"mc-c1": record("mc-c1", "canary", done(c, t0.Add(-2*time.Hour)), done(a, t0.Add(-5*time.Hour))),
				"mc-c2": record("mc-c2", "canary", done(c, t0.Add(-time.Minute)), done(a, t0.Add(-5*time.Hour)))},
			want: a, nextAt: t0.Add(-time.Minute).Add(soak)},
		{name: "a commit one cluster failed is withdrawn, an older promoted one is taken",
			records: map[string]Record{"mc-c1": record("mc-c1", "canary", done(c, t0.Add(-2*time.Hour)), done(a, t0.Add(-5*time.Hour))),
				"mc-c2": record("mc-c2", "canary", CommitRecord{Commit: c, State: Failed, Since: t0}, done(a, t0.Add(-5*time.Hour)))},
			want: a},
		{name: "never back past the current commit",
			records: map[string]Record{"mc-c1": record("mc-c1", "canary", CommitRecord{Commit: b, State: Rejected, Since: t0}, done(a, t0.Add(-5*time.Hour))),
				"mc-c2": record("mc-c2", "canary", done(b, t0.Add(-3*time.Hour)), done(a, t0.Add(-5*time.Hour)))},
			current: b, want: b},
		{name: "a commit promoted by hand skips its upstream",
			manual: map[string]bool{b: true}, want: b, byHand: true},
		{name: "superseded upstream is never promoted",
			records: map[string]Record{"mc-c1": record("mc-c1", "canary", done(c, t0.Add(-2*time.Hour)), CommitRecord{Commit: b, State: Superseded}),
				"mc-c2": record("mc-c2", "canary", done(c, t0.Add(-2*time.Hour)), CommitRecord{Commit: b, State: Superseded})},
			current: a, want: c},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d, err := Decide(Input{Key: "addon", After: []Upstream{{Sector: "canary", Soak: soak}}, Sectors: testMap(),
				Records: tc.records, History: []string{c, b, a}, Current: tc.current, Manual: tc.manual, Now: t0})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Commit).To(Equal(tc.want))
			g.Expect(d.ByHand).To(Equal(tc.byHand))
			g.Expect(d.NextAt).To(Equal(tc.nextAt))
		})
	}
}

func TestDecideRefusesABusThatDoesNotHoldTogether(t *testing.T) {
	c := commitN(1)
	cases := map[string]Input{
		"upstream sector not in the map": {Key: "addon", After: []Upstream{{Sector: "us"}}},
		"record read under another name": {Key: "addon", After: []Upstream{{Sector: "canary"}},
			Records: map[string]Record{"mc-c1": record("mc-c2", "canary", done(c, t0))}},
		"record of another sector": {Key: "addon", After: []Upstream{{Sector: "canary"}},
			Records: map[string]Record{"mc-c1": record("mc-c1", "eu", done(c, t0))}},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			in.Sectors, in.History, in.Now = testMap(), []string{c}, t0
			_, err := Decide(in)
			g.Expect(err).To(HaveOccurred())
		})
	}
}

// TestNoSectorPinsWhatItsUpstreamHasNotCompletedAndSoaked draws random records, histories and
// manual promotions, and checks that the decision is the current commit, a commit promoted by
// hand, or one that every management cluster of every upstream sector completed, soaked and
// never failed.
func TestNoSectorPinsWhatItsUpstreamHasNotCompletedAndSoaked(t *testing.T) {
	g := NewWithT(t)
	rng := rand.New(rand.NewPCG(7, 42))
	states := []State{Progressing, Completed, Completed, Failed, Rejected, Superseded}
	after := []Upstream{{Sector: "canary", Soak: time.Hour}, {Sector: "eu", Soak: 10 * time.Minute}}
	for range 5000 {
		history := []string{}
		for i := range 1 + rng.IntN(6) {
			history = append(history, commitN(i))
		}
		records := map[string]Record{}
		for _, mc := range []string{"mc-c1", "mc-c2", "mc-eu1"} {
			if rng.IntN(5) == 0 {
				continue
			}
			r := record(mc, testMap().sectorOf(mc))
			for _, commit := range history {
				if rng.IntN(3) > 0 {
					r.Commits = append(r.Commits, CommitRecord{Commit: commit, State: states[rng.IntN(len(states))],
						Since: t0.Add(-time.Duration(rng.IntN(180)) * time.Minute)})
				}
			}
			records[mc] = r
		}
		in := Input{Key: "addon", After: after, Sectors: testMap(), Records: records, History: history, Now: t0,
			Manual: map[string]bool{}}
		if rng.IntN(4) == 0 {
			in.Current = history[rng.IntN(len(history))]
		}
		if rng.IntN(6) == 0 {
			in.Manual[history[rng.IntN(len(history))]] = true
		}
		d, err := Decide(in)
		g.Expect(err).NotTo(HaveOccurred())
		if d.Commit == "" || d.Commit == in.Current || in.Manual[d.Commit] {
			continue
		}
		for _, u := range after {
			members, _ := in.Sectors.Members(u.Sector)
			for _, mc := range members {
				r := records[mc]
				c, ok := r.Find(d.Commit)
				g.Expect(ok && c.State == Completed && !t0.Before(c.Since.Add(u.Soak))).To(BeTrue(),
					"commit %s promoted past %s of %s: %+v", d.Commit, mc, u.Sector, c)
			}
		}
	}
}

func TestSummary(t *testing.T) {
	g := NewWithT(t)
	c := commitN(1)
	in := Input{Key: "addon", After: []Upstream{{Sector: "canary"}}, Sectors: testMap(), History: []string{c}, Now: t0,
		Records: map[string]Record{"mc-c1": record("mc-c1", "canary", CommitRecord{Commit: c, State: Progressing,
			PartitionsDone: 1, Partitions: 3, ClustersDone: 4, Clusters: 10})}}
	d, err := Decide(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Summary(d.Head)).To(Equal("canary: mc-c1 progressing 1/3 partitions, 4/10 clusters, mc-c2 not started"))
}

func TestRecordRoundTripAndMerge(t *testing.T) {
	g := NewWithT(t)
	r := Record{ManagementCluster: "mc-c1", Sector: "canary", Key: "addon"}
	r = r.Merge(CommitRecord{Commit: commitN(1), State: Progressing, StartedAt: t0, Since: t0})
	r = r.Merge(CommitRecord{Commit: commitN(2), State: Progressing, StartedAt: t0.Add(time.Minute), Since: t0.Add(time.Minute)})
	r = r.Merge(CommitRecord{Commit: commitN(2), State: Completed, Since: t0.Add(time.Hour)})
	g.Expect(r.Commits).To(HaveLen(2))
	g.Expect(r.Commits[0].StartedAt).To(Equal(t0.Add(time.Minute)))
	g.Expect(r.Commits[1].State).To(Equal(Superseded))
	data, err := r.Encode()
	g.Expect(err).NotTo(HaveOccurred())
	back, err := DecodeRecord(data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Commits).To(HaveLen(2))
	for range MaxCommits + 5 {
		r = r.Merge(CommitRecord{Commit: commitN(len(r.Commits) + 10), State: Completed})
	}
	g.Expect(r.Commits).To(HaveLen(MaxCommits))

	for name, bad := range map[string]string{
		"unknown field": `{"version":"convoy.dev/promotion-record/v1","managementCluster":"a","sector":"b","key":"c","commits":[],"x":1}`,
		"bad version":   `{"version":"v0","managementCluster":"a","sector":"b","key":"c","commits":[]}`,
		"bad commit":    `{"version":"convoy.dev/promotion-record/v1","managementCluster":"a","sector":"b","key":"c","commits":[{"commit":"main","state":"Completed"}]}`,
		"bad state":     `{"version":"convoy.dev/promotion-record/v1","managementCluster":"a","sector":"b","key":"c","commits":[{"commit":"` + commitN(1) + `","state":"Done"}]}`,
		"name with a /": `{"version":"convoy.dev/promotion-record/v1","managementCluster":"a/b","sector":"b","key":"c","commits":[]}`,
		"too large":     `{"version":"` + strings.Repeat("x", MaxRecordBytes) + `"}`,
	} {
		_, err := DecodeRecord([]byte(bad))
		g.Expect(err).To(HaveOccurred(), name)
	}
}

func TestParseSectorMap(t *testing.T) {
	g := NewWithT(t)
	m, err := ParseSectorMap("sectors.yaml", []byte("apiVersion: convoy.dev/v1alpha1\nkind: SectorMap\nsectors:\n- name: canary\n  managementClusters: [mc-1, mc-2]\n"))
	g.Expect(err).NotTo(HaveOccurred())
	members, ok := m.Members("canary")
	g.Expect(ok).To(BeTrue())
	g.Expect(members).To(Equal([]string{"mc-1", "mc-2"}))
	for name, bad := range map[string]string{
		"twice in one sector's cluster": "apiVersion: convoy.dev/v1alpha1\nkind: SectorMap\nsectors:\n- name: a\n  managementClusters: [mc-1]\n- name: b\n  managementClusters: [mc-1]\n",
		"sector listed twice":           "apiVersion: convoy.dev/v1alpha1\nkind: SectorMap\nsectors:\n- name: a\n  managementClusters: [mc-1]\n- name: a\n  managementClusters: [mc-2]\n",
		"empty sector":                  "apiVersion: convoy.dev/v1alpha1\nkind: SectorMap\nsectors:\n- name: a\n",
		"unknown field":                 "apiVersion: convoy.dev/v1alpha1\nkind: SectorMap\nsector: []\n",
		"wrong kind":                    "apiVersion: convoy.dev/v1alpha1\nkind: Sectors\nsectors: []\n",
		"bad name":                      "apiVersion: convoy.dev/v1alpha1\nkind: SectorMap\nsectors:\n- name: A_B\n  managementClusters: [mc-1]\n",
	} {
		_, err := ParseSectorMap("sectors.yaml", []byte(bad))
		g.Expect(err).To(MatchError(ContainSubstring("sectors.yaml")), name)
	}
}
