package bench

import (
	"fmt"
	"slices"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Bounds of the per-sample invariants.
const (
	// soakEventsPerObject bounds the Events: at most this many per convoy object. convoy records
	// one Event per distinct note (internal/eventrec); a storm would pass it.
	soakEventsPerObject = 10
	// soakStoreBase and soakStorePerCommit bound the Git store: a fixed part plus a part per
	// commit pushed; the store keeps every fetched commit, nothing else may grow.
	soakStoreBase      = 16 << 20
	soakStorePerCommit = 256 << 10
)

// Names of the invariants, as the verdicts and violations name them.
const (
	invBudget    = "budget"
	invBarrier   = "barrier"
	invRender    = "render-processes"
	invRevisions = "controller-revisions"
	invEvents    = "events-bounded"
	invGitStore  = "git-store-bounded"
	invStall     = "broken-commits-stall"
	invComplete  = "good-commits-complete"
	invLost      = "no-object-lost"
	invSlope     = "no-growth"
)

// packagesOf returns the Packages of add-on a in the watch, by namespace.
func (s *soakRun) packagesOf(a *soakAddon) map[string]*convoyv1alpha1.Package {
	w := s.e.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]*convoyv1alpha1.Package{}
	for key, p := range w.pkgs {
		if key.Name == a.name() {
			out[key.Namespace] = p
		}
	}
	return out
}

// judgeSample checks the per-sample invariants; the caller holds s.mu. A zombie or orphaned
// render process breaks them only when the last sample saw one too: a render process is
// waited for, or killed, within a sample period.
func (s *soakRun) judgeSample(smp, last *SoakSample) []string {
	var out []string
	for _, a := range s.addons {
		pkgs := s.packagesOf(a)
		out = append(out, s.judgeBudget(a, pkgs)...)
		out = append(out, s.judgeBarrier(a, pkgs)...)
	}
	if last != nil && (smp.RenderZombies > 0 && last.RenderZombies > 0 || smp.RenderOrphans > 0 && last.RenderOrphans > 0) {
		out = append(out, fmt.Sprintf("%s: %d zombie and %d orphaned render processes two samples in a row", invRender,
			smp.RenderZombies, smp.RenderOrphans))
	}
	out = append(out, s.judgeRevisions(smp)...)
	objects := smp.Objects["Package"] + smp.Objects["HostedClusterPackage"] + smp.Objects["GitSource"] + smp.Objects["ObjectDeployment"]
	if smp.Objects["Event"] > soakEventsPerObject*max(objects, 1) {
		out = append(out, fmt.Sprintf("%s: %d Events for %d convoy objects (bound %d per object)", invEvents,
			smp.Objects["Event"], objects, soakEventsPerObject))
	}
	if bound := int64(soakStoreBase + soakStorePerCommit*s.res.Commits); smp.GitStore > bound {
		out = append(out, fmt.Sprintf("%s: the Git store holds %d bytes after %d commits (bound %d)", invGitStore,
			smp.GitStore, s.res.Commits, bound))
	}
	return out
}

// judgedBusy reports whether p counts against its rollout's budget: not Available at its
// generation, or pinned to a revision it has not reached. A Package that never reached a
// revision is being installed, which the budget does not bound.
func judgedBusy(p *convoyv1alpha1.Package) bool {
	if p.Status.Revision == "" || p.DeletionTimestamp != nil {
		return false
	}
	avail := apimeta.FindStatusCondition(p.Status.Conditions, convoyv1alpha1.AvailableCondition)
	if avail == nil || avail.Status != metav1.ConditionTrue || avail.ObservedGeneration != p.Generation {
		return true
	}
	return p.Spec.Revision != "" && p.Spec.Revision != p.Status.Revision
}

// budgetOf is the budget of a rollout over total Packages: 10%, rounded down, at least one.
func budgetOf(total int) int { return max(1, total/10) }

// judgeBudget checks that at most the budget of a's Packages are busy, those of the clusters
// the schedule made unavailable, relabelled or deleted left out.
//
// Note: a cluster deleted from the fleet lowers the budget (10 % of fewer clusters) under
// changes the controller started within the budget before; those may finish, as a Deployment's
// maxUnavailable lets them when it scales down, but no other may start. So a sample over the
// budget breaks it when it holds more than the budget before the shrink, or a Package that was
// not busy in the sample that saw the budget shrink.
func (s *soakRun) judgeBudget(a *soakAddon, pkgs map[string]*convoyv1alpha1.Package) []string {
	busy, total := map[string]bool{}, 0
	for ns, p := range pkgs {
		if !s.e.namespaces[ns] {
			continue
		}
		total++
		if !s.skip[ns] && judgedBusy(p) {
			busy[ns] = true
		}
	}
	budget := budgetOf(total)
	if s.budgets == nil {
		s.budgets = map[string]*budgetWatch{}
	}
	w := s.budgets[a.name()].observe(budget, busy)
	s.budgets[a.name()] = w
	if len(busy) > budget && !w.grandfathered(busy) {
		return []string{fmt.Sprintf("%s: %s has %d of %d Packages unavailable or updating (budget %d)", invBudget,
			a.name(), len(busy), total, budget)}
	}
	return nil
}

// budgetWatch is what judgeBudget remembers of an add-on between samples: the last budget,
// and while the Packages busy exceed it after it shrank, those Packages and the budget before.
type budgetWatch struct {
	budget int
	held   map[string]bool
	before int
}

// observe returns the watch after a sample with budget and busy; w may be nil (the first).
func (w *budgetWatch) observe(budget int, busy map[string]bool) *budgetWatch {
	next := &budgetWatch{budget: budget}
	switch {
	case w == nil || len(busy) <= budget:
	case budget < w.budget:
		next.held, next.before = busy, w.budget
	default:
		next.held, next.before = w.held, w.before
	}
	return next
}

// grandfathered reports whether busy is within the budget before the last shrink and every
// Package of it was busy when the shrink was seen.
func (w *budgetWatch) grandfathered(busy map[string]bool) bool {
	if len(w.held) == 0 || len(busy) > w.before {
		return false
	}
	for ns := range busy {
		if !w.held[ns] {
			return false
		}
	}
	return true
}

// judgeBarrier checks that no partition got a revision before every earlier partition reached
// it: for each revision some Package is pinned to, every judged Package of an earlier
// partition than the latest partition pinned to it must have reached that revision or one
// that became the head after it first did (a force-push makes an older commit the head again;
// Packages pinned to it before stay pinned).
func (s *soakRun) judgeBarrier(a *soakAddon, pkgs map[string]*convoyv1alpha1.Package) []string {
	latest := map[string]int{}
	for ns, p := range pkgs {
		if s.e.namespaces[ns] && !s.skip[ns] && p.Spec.Revision != "" {
			latest[p.Spec.Revision] = max(latest[p.Spec.Revision], slices.Index(soakPartitions, s.partition[ns]))
		}
	}
	for rev, k := range latest {
		for ns, p := range pkgs {
			i := slices.Index(soakPartitions, s.partition[ns])
			if !s.e.namespaces[ns] || s.skip[ns] || i >= k || p.Status.Revision == "" {
				continue
			}
			if !s.heads[p.Status.Revision].Before(s.firstHeads[rev]) {
				continue
			}
			return []string{fmt.Sprintf("%s: %s pins %.8s in partition %s while %s (partition %s) is at %.8s", invBarrier,
				a.name(), rev, soakPartitions[k], ns, s.partition[ns], p.Status.Revision)}
		}
	}
	return nil
}

// judgeStall records the verdict on a broken commit of a about to be fixed: at most the budget
// of its Packages were ever pinned to it, as the Packages pinned to it now show. The budget is
// that of the larger fleet, at the break (totalAtBreak) or now: a cluster deleted since lowers
// the budget under Packages pinned within the budget before (see judgeBudget).
func (s *soakRun) judgeStall(a *soakAddon, broken string, totalAtBreak int) {
	pkgs := s.packagesOf(a)
	s.mu.Lock()
	defer s.mu.Unlock()
	pinned, total := 0, 0
	for ns, p := range pkgs {
		if !s.e.namespaces[ns] {
			continue
		}
		total++
		if p.Spec.Revision == broken {
			pinned++
		}
	}
	budget := budgetOf(max(total, totalAtBreak))
	v := SoakVerdict{Name: invStall, Passed: pinned <= budget,
		Detail: fmt.Sprintf("%s: %d of %d Packages pinned to broken %.8s after %s (budget %d)", a.name(), pinned, total,
			broken, s.cfg.BrokenFor, budget)}
	s.res.Stalls = append(s.res.Stalls, v)
}

// totalAtBreak is the fleet a broken commit of a is judged against: the judged fleet, or
// every Package of a when more (a cluster the schedule deleted is out of the judged fleet at
// once, but the controller counts its HostedCluster, and plans its budget with it, until the
// deletion is finished).
func (s *soakRun) totalAtBreak(a *soakAddon) int {
	all := len(s.packagesOf(a))
	return max(s.judgedTotal(a), all)
}

// judgedTotal counts the Packages of a in the judged fleet.
func (s *soakRun) judgedTotal(a *soakAddon) int {
	pkgs := s.packagesOf(a)
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0
	for ns := range pkgs {
		if s.e.namespaces[ns] {
			total++
		}
	}
	return total
}

// judgeRevisions checks each add-on's ControllerRevisions against its history limit: the
// controller keeps revisionHistoryLimit old ones besides the current and update revisions and
// those a Package still uses (a Package's commit and config), so the bound is their sum.
func (s *soakRun) judgeRevisions(smp *SoakSample) []string {
	var out []string
	for _, a := range s.addons {
		inUse := map[string]bool{}
		for _, p := range s.packagesOf(a) {
			config := ""
			if p.Spec.Config != nil {
				config = string(p.Spec.Config.Raw)
			}
			inUse[p.Spec.Revision+"/"+config] = true
		}
		if bound := soakHistoryLimit + 2 + len(inUse); smp.Revisions[a.name()] > bound {
			out = append(out, fmt.Sprintf("%s: %s has %d ControllerRevisions: history limit %d, + current and update, + %d in use by its Packages",
				invRevisions, a.name(), smp.Revisions[a.name()], soakHistoryLimit, len(inUse)))
		}
	}
	return out
}
