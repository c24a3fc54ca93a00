package rollout

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// dependencyRuns is the number of random graphs TestPropertyDependencies plays.
const dependencyRuns = 80

// addons is a fleet of add-ons, one simulated HostedClusterPackage each, over the same
// HostedClusters; needs[i] lists the add-ons add-on i depends on, all before it (acyclic).
type addons struct {
	g     Gomega
	sims  []*sim
	needs [][]int
	// broken is the cluster where the root's upgrade never progresses; "" when none.
	broken string
}

// TestPropertyDependencies plays random acyclic graphs of five add-ons over random fleets, new
// or settled, with random strategies, clusters joining and leaving, and checks every plan of
// every add-on before it is applied (rule 26 of package rollout):
//   - no Package is created or moves to a revision (but back, in a rollback) on a cluster
//     where one of its dependencies' Packages has not progressed at its spec;
//   - no Package is deleted while a dependant still has one in its namespace;
//   - waiting is not failing: the dependants of a root whose upgrade breaks on one cluster
//     report no failure;
//
// and, without a broken cluster, that every add-on completes on every cluster: no deadlock.
func TestPropertyDependencies(t *testing.T) {
	for run := range dependencyRuns {
		t.Run(strconv.Itoa(run), func(t *testing.T) {
			g := NewWithT(t)
			rng := rand.New(rand.NewPCG(uint64(run), 0xde9))
			a := newAddons(t, g, rng, uint64(run))
			for step := range 400 {
				if step == 20 && rng.IntN(2) == 0 {
					a.leave(rng)
				}
				if step == 25 && rng.IntN(2) == 0 {
					a.join(fmt.Sprintf("late-%d", step))
				}
				if a.step() && step > 30 {
					break
				}
			}
			a.settled()
		})
	}
}

// newAddons returns five add-ons over 1 to 8 clusters with a random acyclic graph: either new
// clusters with nothing installed, or a settled fleet whose add-ons all roll out a new commit,
// the root's broken on one cluster a third of the time.
func newAddons(t *testing.T, g Gomega, rng *rand.Rand, seed uint64) *addons {
	a := &addons{g: g}
	base := newWorld().fleet(1+rng.IntN(4), "early", "late")
	settled := rng.IntN(2) == 0
	if settled && rng.IntN(3) == 0 {
		a.broken = base.clusters[rng.IntN(len(base.clusters))].Name
	}
	for i := range 5 {
		w := newWorld()
		w.clusters = base.clusters
		w.hcpkg.Name = "addon-" + strconv.Itoa(i)
		w.hcpkg.Spec.Strategy = rolling(intstr.FromInt32(int32(1 + rng.IntN(3))))
		if rng.IntN(3) == 0 {
			w.hcpkg.Spec.Strategy = convoyv1alpha1.HostedClusterPackageStrategy{Instant: &convoyv1alpha1.InstantStrategy{}}
		}
		if settled {
			w.progressedAll(revision(1))
		} else {
			w.current, w.history = nil, []Revision{revision(2)}
		}
		s := newSim(t, w, seed+uint64(i))
		if a.broken != "" && i == 0 {
			s.breakOn(a.broken, revision(2))
		}
		a.sims = append(a.sims, s)
		var needs []int
		for j := range i {
			if rng.IntN(2) == 0 {
				needs = append(needs, j)
			}
		}
		a.needs = append(a.needs, needs)
	}
	for i, s := range a.sims {
		s.amend = a.amend(i)
		s.check = a.check(i)
	}
	return a
}

// amend gives add-on i's input its dependencies and its dependants' Packages.
func (a *addons) amend(i int) func(in *Input) {
	return func(in *Input) {
		for _, j := range a.needs[i] {
			in.Dependencies = append(in.Dependencies, Dependency{Name: a.name(j), Packages: a.sims[j].packages})
		}
		in.Dependants = map[string][]string{}
		for k, needs := range a.needs {
			for _, j := range needs {
				if j == i {
					for ns := range a.present(k) {
						in.Dependants[ns] = append(in.Dependants[ns], a.name(k))
					}
				}
			}
		}
	}
}

// present returns the namespaces where add-on k has a Package, being deleted or not.
func (a *addons) present(k int) map[string]bool {
	out := map[string]bool{}
	for ns := range a.sims[k].packages {
		out[ns] = true
	}
	for ns := range a.sims[k].deleting {
		out[ns] = true
	}
	return out
}

// name of add-on i.
func (a *addons) name(i int) string { return "addon-" + strconv.Itoa(i) }

// check verifies a plan of add-on i against the other add-ons.
func (a *addons) check(i int) func(plan *Plan) {
	return func(plan *Plan) {
		for _, c := range append(append([]Change{}, plan.Creates...), plan.Updates...) {
			if c.Reason == RollbackReason {
				continue
			}
			for _, j := range a.needs[i] {
				dep := a.sims[j].packages[c.Package.Namespace]
				a.g.Expect(dep != nil && Progressed(dep) && dep.DeletionTimestamp == nil).To(BeTrue(),
					"%s moves on %s while %s is not available there\n%s", a.name(i), c.HostedCluster, a.name(j), a.sims[i].log.String())
			}
		}
		for _, d := range plan.Deletes {
			for k, needs := range a.needs {
				for _, j := range needs {
					a.g.Expect(j == i && a.present(k)[d.Package.Namespace]).To(BeFalse(),
						"%s deleted from %s while %s is there", a.name(i), d.Package.Namespace, a.name(k))
				}
			}
		}
		if i > 0 {
			a.g.Expect(plan.Failed).To(BeEmpty(), "%s fails while it waits\n%s", a.name(i), a.sims[i].log.String())
		}
	}
}

// step advances every add-on by one step and reports whether all completed with nothing left
// to do.
func (a *addons) step() bool {
	all := true
	for _, s := range a.sims {
		plan := s.advance()
		settled := plan.DeletionsWaiting == 0 && len(s.deleting) == 0 && len(plan.Waiting) == 0
		all = all && plan.Completed && settled && len(describe(plan)) == 0
	}
	for _, s := range a.sims {
		s.clusters = a.sims[0].clusters
	}
	return all
}

// leave removes a random cluster from the fleet.
func (a *addons) leave(rng *rand.Rand) {
	s := a.sims[0]
	if len(s.clusters) > 1 {
		s.remove(s.clusters[rng.IntN(len(s.clusters))].Name)
	}
	for _, o := range a.sims[1:] {
		o.clusters = s.clusters
	}
}

// join adds a new cluster to the fleet.
func (a *addons) join(name string) {
	a.sims[0].cluster(name, "late")
	for _, o := range a.sims[1:] {
		o.clusters = a.sims[0].clusters
	}
}

// settled checks the end: without a broken cluster every add-on completed on every cluster;
// with one, every add-on that depends on the root, directly or not, waits there and only there.
func (a *addons) settled() {
	for i, s := range a.sims {
		last := s.plans[len(s.plans)-1]
		if a.broken == "" {
			a.g.Expect(last.Completed).To(BeTrue(), "%s\n%s", a.name(i), s.log.String())
			for _, hc := range s.clusters {
				a.g.Expect(s.revisionOf(namespaceOf(hc.Name))).To(Equal(s.update.Name), a.name(i)+" "+hc.Name)
			}
			continue
		}
		for _, w := range last.Waiting {
			a.g.Expect(w.HostedCluster).To(Equal(clusterNS+"/"+a.broken), "%s: %s", a.name(i), w.Message)
			a.g.Expect(strings.Contains(w.Message, "waits for HostedClusterPackage")).To(BeTrue())
		}
	}
}
