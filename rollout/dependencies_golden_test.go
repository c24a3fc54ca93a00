package rollout

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// goldenAddonNeeds is the graph of the dependency goldens: crds (0) first; certs (1) and
// monitoring (2) need it; webhook (3) needs certs, a chain of depth three; app (4) needs certs
// and monitoring, a diamond.
var goldenAddonNeeds = [][]int{{}, {0}, {0}, {1}, {1, 2}}

// goldenAddons returns the five add-ons of goldenAddonNeeds over two clusters of early and two
// of late: new clusters with nothing installed, or, when settled, a fleet on rev1 rolling out
// rev2, the root's upgrade broken on late-2 (in the last partition: a Package that waits keeps
// its partition from being done, so a wait in early would hold late everywhere). Every plan is checked as in
// TestPropertyDependencies, and logged into log.
func goldenAddons(t *testing.T, g Gomega, settled bool, log *dependencyLog) *addons {
	a := &addons{g: g, needs: goldenAddonNeeds}
	base := newWorld().fleet(2, "early", "late")
	if settled {
		a.broken = "late-2"
	}
	for i := range goldenAddonNeeds {
		w := newWorld()
		w.clusters = base.clusters
		w.hcpkg.Name = a.name(i)
		w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(2))
		if settled {
			w.progressedAll(revision(1))
		} else {
			w.current, w.history = nil, []Revision{revision(2)}
		}
		s := newSim(t, w, seed+uint64(i))
		if settled && i == 0 {
			s.breakOn(a.broken, revision(2))
		}
		a.sims = append(a.sims, s)
	}
	for i, s := range a.sims {
		s.amend = a.amend(i)
		check := a.check(i)
		s.check = func(plan *Plan) {
			check(plan)
			log.record(a.name(i), s, plan)
		}
	}
	return a
}

// dependencyLog is the golden's log: per step, each add-on's changes and the Packages that
// wait, a step written only when it differs from the one before.
type dependencyLog struct {
	b, step strings.Builder
	last    string
}

// record adds what add-on name's plan at s's step changes and holds.
func (l *dependencyLog) record(name string, s *sim, plan *Plan) {
	for _, line := range s.changeLines(plan) {
		fmt.Fprintf(&l.step, "  %-10s %s\n", name, line)
	}
	for _, w := range plan.Waiting {
		fmt.Fprintf(&l.step, "  %-10s wait     %s %s on %s: %s\n", name, strings.TrimPrefix(w.HostedCluster, clusterNS+"/"),
			w.Reason, w.Dependency, w.Message)
	}
}

// flush ends step n.
func (l *dependencyLog) flush(n int) {
	got := l.step.String()
	l.step.Reset()
	if got == l.last {
		return
	}
	l.last = got
	fmt.Fprintf(&l.b, "step %d\n%s", n, got)
}

// run steps the add-ons until all completed, or for n steps.
func (l *dependencyLog) run(a *addons, n int) {
	for step := range n {
		done := a.step()
		l.flush(step)
		if done {
			return
		}
	}
}

// TestGoldenDependenciesOnNewClusters installs the five add-ons on four new clusters: on each,
// an add-on is created only once what it needs progressed there (checked at every plan), the
// others wait naming it, and every add-on ends on every cluster.
func TestGoldenDependenciesOnNewClusters(t *testing.T) {
	g := NewWithT(t)
	log := &dependencyLog{}
	a := goldenAddons(t, g, false, log)
	log.run(a, 200)
	a.settled()
	g.Expect(log.b.String()).To(ContainSubstring("wait     early-1 DependencyNotReady on addon-0"))
	expectDependencyGolden(t, log, "dependencies-new-clusters")
}

// TestGoldenDependenciesBrokenRoot upgrades all five add-ons while the root's upgrade never
// progresses on late-2: the add-ons that need the root wait there, and only there, without
// failing, and complete everywhere else; those further down move there too, since what they
// need is available there at its previous commit.
func TestGoldenDependenciesBrokenRoot(t *testing.T) {
	g := NewWithT(t)
	log := &dependencyLog{}
	a := goldenAddons(t, g, true, log)
	log.run(a, 60)
	a.settled()
	for i, s := range a.sims[1:] {
		needsRoot := a.needs[i+1][0] == 0
		for _, hc := range s.clusters {
			want := s.update.Name
			if hc.Name == a.broken && needsRoot {
				want = "rev1"
			}
			g.Expect(s.revisionOf(namespaceOf(hc.Name))).To(Equal(want), a.name(i+1)+" on "+hc.Name)
		}
	}
	expectDependencyGolden(t, log, "dependencies-broken-root")
}

// expectDependencyGolden compares log with testdata/<name>.golden, or rewrites it under -update.
func expectDependencyGolden(t *testing.T, log *dependencyLog, name string) {
	s := &sim{}
	s.log.WriteString(log.b.String())
	expectGolden(t, s, name)
}
