package promotion

import (
	"fmt"
	"strings"
	"time"
)

// Upstream is one sector that must have run a commit first, and for how long.
type Upstream struct {
	// Sector is the upstream sector's name.
	Sector string
	// Soak is how long after the last of its management clusters completed a commit the
	// commit waits before it is promoted.
	Soak time.Duration
}

// Input is what Decide reads.
type Input struct {
	// Key is the HostedClusterPackage's promotion key.
	Key string
	// After lists the upstream sectors.
	After []Upstream
	// Sectors is the sector map.
	Sectors SectorMap
	// Records are the records of Key read from the bus, by management cluster; one missing is
	// a management cluster that has not reported.
	Records map[string]Record
	// History are the fetched commits from the GitSource's head back, newest first.
	History []string
	// Current is the commit the sector rolls out now; "" before its first. Decide never goes
	// back past it: a sector moves forward to a newer promoted commit, or stays.
	Current string
	// Manual are the commits promoted by hand into the sector.
	Manual map[string]bool
	// Now is the clock.
	Now time.Time
}

// Decision is which commit the sector may roll out, and why.
type Decision struct {
	// Commit is the newest commit of History that is promoted, or Current when none newer
	// is; "" when neither.
	Commit string
	// ByHand is true when Commit was promoted by hand only.
	ByHand bool
	// Withdrawn holds the commits an upstream management cluster failed or rejected, with
	// what it said.
	Withdrawn map[string]string
	// Head is what every upstream sector did with History[0], the GitSource's head.
	Head []SectorView
	// NextAt is when the soak of a commit newer than Commit ends, the earliest of them;
	// zero when none soaks.
	NextAt time.Time
}

// SectorView is what one upstream sector did with one commit.
type SectorView struct {
	// Sector and its Soak.
	Sector string
	Soak   time.Duration
	// ManagementClusters in the sector map's order.
	ManagementClusters []ClusterView
	// CompletedAt is when its last management cluster completed the commit; zero unless all did.
	CompletedAt time.Time
}

// ClusterView is what one management cluster did with one commit.
type ClusterView struct {
	// Name of the management cluster.
	Name string
	// Record is its record of the commit; State is empty when it has none.
	Record CommitRecord
}

// Decide applies the package's rules to in. It fails when the bus cannot be trusted: an
// upstream sector the sector map does not declare, or a record that names another management
// cluster, sector or key than where it was read.
func Decide(in Input) (Decision, error) {
	if err := in.check(); err != nil {
		return Decision{}, err
	}
	d := Decision{Withdrawn: withdrawn(in)}
	for i, commit := range in.History {
		views := in.views(commit)
		if i == 0 {
			d.Head = views
		}
		if commit == in.Current {
			d.Commit, d.ByHand = commit, in.Manual[commit] && !promoted(views, in.Now)
			return d, nil
		}
		if in.Manual[commit] {
			d.Commit, d.ByHand = commit, !promoted(views, in.Now)
			return d, nil
		}
		if _, out := d.Withdrawn[commit]; out {
			continue
		}
		if promoted(views, in.Now) {
			d.Commit = commit
			return d, nil
		}
		if at := soakEnd(views); !at.IsZero() && (d.NextAt.IsZero() || at.Before(d.NextAt)) {
			d.NextAt = at
		}
	}
	d.Commit = in.Current
	return d, nil
}

// check refuses an input that does not hold together.
func (in Input) check() error {
	for _, u := range in.After {
		if _, ok := in.Sectors.Members(u.Sector); !ok {
			return fmt.Errorf("upstream sector %s is not in the sector map", u.Sector)
		}
	}
	for mc, r := range in.Records {
		if r.ManagementCluster != mc {
			return fmt.Errorf("the record of management cluster %s names %s", mc, r.ManagementCluster)
		}
		if r.Key != in.Key {
			return fmt.Errorf("the record of management cluster %s is for %s, not %s", mc, r.Key, in.Key)
		}
		if s := in.Sectors.sectorOf(mc); s != "" && s != r.Sector {
			return fmt.Errorf("management cluster %s publishes as sector %s; the sector map puts it in %s", mc, r.Sector, s)
		}
	}
	return nil
}

// sectorOf returns the sector of management cluster mc; "" when the map has none.
func (m SectorMap) sectorOf(mc string) string {
	for _, s := range m.Sectors {
		for _, name := range s.ManagementClusters {
			if name == mc {
				return s.Name
			}
		}
	}
	return ""
}

// withdrawn returns the commits that a management cluster of an upstream sector failed or
// rejected, with what it said.
func withdrawn(in Input) map[string]string {
	out := map[string]string{}
	for _, u := range in.After {
		members, _ := in.Sectors.Members(u.Sector)
		for _, mc := range members {
			r, ok := in.Records[mc]
			if !ok {
				continue
			}
			for _, c := range r.Commits {
				if c.State == Failed || c.State == Rejected {
					out[c.Commit] = fmt.Sprintf("management cluster %s of sector %s: %s", mc, u.Sector, strings.ToLower(string(c.State)))
				}
			}
		}
	}
	return out
}

// views returns what every upstream sector did with commit.
func (in Input) views(commit string) []SectorView {
	out := make([]SectorView, 0, len(in.After))
	for _, u := range in.After {
		members, _ := in.Sectors.Members(u.Sector)
		v := SectorView{Sector: u.Sector, Soak: u.Soak}
		all := true
		for _, mc := range members {
			cv := ClusterView{Name: mc}
			if r, ok := in.Records[mc]; ok {
				cv.Record, _ = r.Find(commit)
			}
			v.ManagementClusters = append(v.ManagementClusters, cv)
			if cv.Record.State != Completed {
				all = false
			} else if cv.Record.Since.After(v.CompletedAt) {
				v.CompletedAt = cv.Record.Since
			}
		}
		if !all {
			v.CompletedAt = time.Time{}
		}
		out = append(out, v)
	}
	return out
}

// promoted reports whether every upstream sector completed the commit and soaked it by now.
func promoted(views []SectorView, now time.Time) bool {
	for _, v := range views {
		if v.CompletedAt.IsZero() || now.Before(v.CompletedAt.Add(v.Soak)) {
			return false
		}
	}
	return true
}

// soakEnd returns when every upstream sector will have soaked a commit they all completed;
// zero when one has not completed it.
func soakEnd(views []SectorView) time.Time {
	var end time.Time
	for _, v := range views {
		if v.CompletedAt.IsZero() {
			return time.Time{}
		}
		if at := v.CompletedAt.Add(v.Soak); at.After(end) {
			end = at
		}
	}
	return end
}

// Summary says in one line what the upstream sectors did with a commit, for a gate message:
// "canary: mc-1 Completed, mc-2 Progressing 2/3 partitions".
func Summary(views []SectorView) string {
	parts := make([]string, 0, len(views))
	for _, v := range views {
		var mcs []string
		for _, c := range v.ManagementClusters {
			mcs = append(mcs, c.Name+" "+c.describe())
		}
		parts = append(parts, v.Sector+": "+strings.Join(mcs, ", "))
	}
	return strings.Join(parts, "; ")
}

// describe says what the management cluster did with the commit.
func (c ClusterView) describe() string {
	switch c.Record.State {
	case "":
		return "not started"
	case Progressing:
		return fmt.Sprintf("progressing %d/%d partitions, %d/%d clusters", c.Record.PartitionsDone, c.Record.Partitions,
			c.Record.ClustersDone, c.Record.Clusters)
	default:
		return strings.ToLower(string(c.Record.State))
	}
}
