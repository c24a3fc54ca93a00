package memory

import (
	"crypto/sha256"
)

// recordVerdicts notes, for every object of a phase found available that was seen live, that
// it was judged available under the rules of c at its resourceVersion, and adds to m those the
// watch of the management cluster vouches for (settled.go).
//   - A quiet object is vouched for: the watch holds the state it was judged at.
//   - An object judged at a state the ledger holds for this owner (applied or read by this
//     pass) and labelled for it is vouched for once the watch holds that state too: it is
//     added to m.unconfirmed, which the first repeat checks.
//
// Only a watch vouches: nothing in a hosted cluster is, however quiet a list found it.
func (s *Store) recordVerdicts(m *Mark, c Cluster, verdicts []Verdict) {
	if (s.versions == nil && !c.Hosted) || c.Rules == ([sha256.Size]byte{}) {
		return
	}
	owner, cl := c.Owner.id(), c.name()
	for i := range verdicts {
		v := &verdicts[i]
		if v.Quiet {
			if !c.Hosted {
				m.vouched++
			}
			continue
		}
		if v.Live == (Observed{}) || !s.ledger.judgedAvailable(ledgerKey{cluster: cl, object: Key{GK: v.GVK.GroupKind(),
			Namespace: v.Namespace, Name: v.Name}}, owner, v.Live, c.Rules) || c.Hosted || !v.Owned {
			continue
		}
		m.vouched++
		m.unconfirmed = append(m.unconfirmed, watchedState{gvk: v.GVK, namespace: v.Namespace, name: v.Name,
			resourceVersion: v.Live.ResourceVersion})
	}
}

// judgedAvailable notes that the object of key, at live, was judged available under rules, if
// the ledger holds it for owner at live's resourceVersion and UID; it reports whether it does.
func (l *ledger) judgedAvailable(key ledgerKey, owner string, live Observed, rules [sha256.Size]byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, found := l.entries[key]
	if !found || !e.isState(owner, live.ResourceVersion, live.UID) {
		return false
	}
	e.availableUnder = rules
	l.entries[key] = e
	return true
}
