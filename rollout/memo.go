package rollout

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Memo carries, from one plan of a HostedClusterPackage to the next, what the planner concluded
// of each Package from its spec alone: which known revision the spec matches. A plan then
// compares with the revisions' templates only the Packages that changed since the last plan,
// instead of every Package of the fleet at every pass.
//
// An entry holds for one Package (its UID) at one resourceVersion, under the same known
// revisions (their commits and templates, in the same order): the API server changes the
// resourceVersion with every write, and a change of the revisions empties the Memo. A Package
// without a UID or a resourceVersion is never remembered. Entries of Packages a plan no longer
// sees are dropped at its end.
//
// Planning with a Memo gives the same plan as planning without one: the planner's simulations
// plan every step both ways and compare. A Memo serves the plans of one
// HostedClusterPackage; its zero value is ready to use.
type Memo struct {
	mu sync.Mutex
	// revisions are the known revisions the entries were made for.
	revisions []Revision
	// matches holds the index in revisions of the revision each Package matched, -1 for none.
	matches map[memoKey]int
	// next collects the entries of the plan under way; it replaces matches at the plan's end.
	next map[memoKey]int
}

// memoKey names a Package at one resourceVersion.
type memoKey struct {
	uid             types.UID
	resourceVersion string
}

// begin starts a plan of in: entries made under other revisions are dropped. The Memo is the
// plan's until end. A nil Memo does nothing.
func (m *Memo) begin(in *Input) {
	if m == nil {
		return
	}
	m.mu.Lock()
	if revs := revisionsOf(in); !sameRevisions(m.revisions, revs) {
		m.revisions = make([]Revision, len(revs))
		for i, rev := range revs {
			m.revisions[i] = Revision{Commit: rev.Commit, Template: *rev.Template.DeepCopy()}
		}
		m.matches = nil
	}
	m.next = make(map[memoKey]int, len(m.matches))
}

// end keeps the entries of the plan that began and lets the next plan begin.
func (m *Memo) end() {
	if m == nil {
		return
	}
	m.matches, m.next = m.next, nil
	m.mu.Unlock()
}

// match returns the index of the revision pkg matches, computing it with find unless remembered;
// a nil Memo always computes it.
func (m *Memo) match(pkg *convoyv1alpha1.Package, find func(*convoyv1alpha1.Package) int) int {
	if m == nil || pkg.UID == "" || pkg.ResourceVersion == "" {
		return find(pkg)
	}
	key := memoKey{uid: pkg.UID, resourceVersion: pkg.ResourceVersion}
	if i, ok := m.next[key]; ok {
		return i
	}
	i, ok := m.matches[key]
	if !ok {
		i = find(pkg)
	}
	m.next[key] = i
	return i
}

// sameRevisions reports whether remembered holds the commits and templates of revs, in order.
func sameRevisions(remembered []Revision, revs []*Revision) bool {
	if len(remembered) != len(revs) {
		return false
	}
	for i, rev := range revs {
		if remembered[i].Commit != rev.Commit || !equality.Semantic.DeepEqual(remembered[i].Template, rev.Template) {
			return false
		}
	}
	return true
}
