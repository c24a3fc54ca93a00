package memory

import (
	"context"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

var configMapKind = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// management and hosted are the two clusters of owner ns/pkg.
var (
	management = Cluster{Owner: Owner{Namespace: "ns", Name: "pkg"}}
	hosted     = Cluster{Owner: Owner{Namespace: "ns", Name: "pkg"}, Hosted: true}
)

// desired is ConfigMap ns/name as a pass wants it, at version v of its content.
func desired(name string, v byte) Desired {
	return Desired{GVK: configMapKind, Namespace: "ns", Name: name, Digest: manifests.Digest{v}, Known: true}
}

// event is ConfigMap ns/a as a watch delivers it, labelled for owner ns/pkg, at rv.
func event(rv string) *unstructured.Unstructured {
	obj := kubetest.ConfigMap("ns", "a", nil)
	obj.SetLabels(map[string]string{convoyv1alpha1.PackageNameLabel: "pkg", convoyv1alpha1.PackageNamespaceLabel: "ns"})
	obj.SetResourceVersion(rv)
	obj.SetUID("uid")
	return obj
}

func at(rv string) Observed { return Observed{ResourceVersion: rv, UID: "uid"} }

// heldVersions is a synced watch of ConfigMaps in namespace ns that holds each named object at
// its resourceVersion.
type heldVersions map[string]string

func (h heldVersions) ResourceVersion(_ schema.GroupVersionKind, _, name string) (string, bool) {
	rv, ok := h[name]
	return rv, ok
}

func (h heldVersions) Synced(schema.GroupVersionKind) bool { return true }

func TestTheEngineOwnWritesAreToldApart(t *testing.T) {
	g := NewWithT(t)
	s := New(Options{Controller: "own-writes-test"})
	a := desired("a", 1)
	s.Applied(management, []Write{{Desired: a, Live: at("7")}})
	g.Expect(s.AppliedByEngine(event("7"))).To(BeTrue(), "the event of the engine's own apply")
	s.Applying(management, []Desired{a})
	g.Expect(s.AppliedByEngine(event("9"))).To(BeTrue(), "an event that comes before the apply's response")
	s.Applied(management, []Write{{Desired: a, Live: at("9")}})
	g.Expect(s.AppliedByEngine(event("9"))).To(BeTrue(), "the response is recorded")
	g.Expect(s.AppliedByEngine(event("8"))).To(BeFalse(), "a later write by someone else")
	s.Applied(management, []Write{{Desired: a, Forget: true}})
	s.Applied(hosted, []Write{{Desired: a, Live: at("9")}})
	g.Expect(s.AppliedByEngine(event("9"))).To(BeFalse(), "an object of the hosted cluster is another object")
}

// An event delivered while its owner applies the object is held until the stage tells the
// apply's answer, then counted unless it was of the state recorded.
func TestTheEventsOfAnApplyInFlightAreHeldUntilItEnds(t *testing.T) {
	g := NewWithT(t)
	s := New(Options{Controller: "held-events-test"})
	a := desired("a", 1)
	counted := map[string]int{}
	counter := func(rv string) func() { return func() { counted[rv]++ } }

	s.Applying(management, []Desired{a})
	g.Expect(s.HoldsState(event("5"), counter("5"))).To(BeTrue(), "the apply's own event, before its response")
	g.Expect(s.HoldsState(event("6"), counter("6"))).To(BeTrue(), "a write after it, before its response")
	g.Expect(counted).To(BeEmpty(), "not told apart yet")
	s.Applied(management, []Write{{Desired: a, Live: at("5")}})
	g.Expect(counted).To(Equal(map[string]int{"6": 1}), "the write after the apply is counted when it ends")
	g.Expect(s.HoldsState(event("5"), counter("5"))).To(BeTrue(), "the state recorded")

	s.Applying(management, []Desired{a})
	g.Expect(s.HoldsState(event("7"), counter("7"))).To(BeTrue())
	s.Applied(management, []Write{{Desired: a}}) // refused: nothing to record
	g.Expect(counted).To(HaveKeyWithValue("7", 1), "nothing recorded: counted")

	other := event("8")
	other.SetLabels(map[string]string{convoyv1alpha1.PackageNameLabel: "other", convoyv1alpha1.PackageNamespaceLabel: "ns"})
	s.Applying(management, []Desired{a})
	g.Expect(s.HoldsState(other, counter("8"))).To(BeFalse(), "labels of another owner: counted at once")
	for i := range maxPendingEvents {
		g.Expect(s.HoldsState(event(strconv.Itoa(10+i)), counter("many"))).To(BeTrue())
	}
	g.Expect(s.HoldsState(event("99"), counter("99"))).To(BeFalse(), "past the bound: counted at once")
	s.Applied(management, []Write{{Desired: a, Live: at("10")}})
	g.Expect(counted).To(HaveKeyWithValue("many", maxPendingEvents-1))
	g.Expect(s.ledger.applying).To(BeEmpty())

	s.Applying(management, []Desired{a})
	g.Expect(s.HoldsState(event("10"), counter("10"))).To(BeTrue(), "a late event of the state recorded")
	s.Applied(management, []Write{{Desired: a, Live: at("11")}})
	g.Expect(counted).NotTo(HaveKey("10"), "skipped at once, not held")

	// Another owner's apply of the object in flight holds none of this owner's events.
	b := Cluster{Owner: Owner{Namespace: "ns", Name: "other"}}
	s.Applying(b, []Desired{a})
	g.Expect(s.HoldsState(event("12"), counter("12"))).To(BeFalse(), "no apply of this owner in flight")
	s.Applying(management, []Desired{a})
	g.Expect(s.HoldsState(event("13"), counter("13"))).To(BeTrue())
	s.Applied(management, []Write{{Desired: a, Live: at("14")}})
	g.Expect(counted).To(HaveKeyWithValue("13", 1), "told apart when this owner's apply ends, not the other's")
	s.Applied(b, []Write{{Desired: a}})
	g.Expect(s.ledger.applying).To(BeEmpty())
}

// What Ask advises to apply without a read is in flight until Applied: the watch events of
// those applies are the engine's own.
func TestAskHoldsWhatItAdvisesToApplyWithoutARead(t *testing.T) {
	g := NewWithT(t)
	s := New(Options{Controller: "ask-in-flight-test", Versions: heldVersions{"b": "3"}})
	a, b := desired("a", 1), desired("b", 1)
	s.Applied(management, []Write{{Desired: b, Live: Observed{ResourceVersion: "3", UID: "b"}}})
	advice := s.Ask(context.Background(), management, []Desired{a, desired("b", 2)})
	g.Expect(advice).To(Equal([]Advice{{Fresh: true}, {UID: "b"}}))
	g.Expect(s.ledger.applying).To(HaveLen(2), "a is created, b applied directly, without a read")
	g.Expect(s.AppliedByEngine(event("4"))).To(BeTrue())
	s.Applied(management, []Write{{Desired: a, Live: at("4")}, {Desired: b}})
	g.Expect(s.ledger.applying).To(BeEmpty())

	inventoried := management
	inventoried.Previous = []convoyv1alpha1.InventoryEntry{{ID: "ns_b__ConfigMap", Cluster: convoyv1alpha1.InventoryClusterManagement}}
	g.Expect(s.Ask(context.Background(), inventoried, []Desired{b})).To(Equal([]Advice{{Recorded: Observed{ResourceVersion: "3", UID: "b"}}}),
		"an object of the previous inventory is read, and not written when found as recorded")
	g.Expect(s.ledger.applying).To(BeEmpty())
}

// An object this owner applied in another state is applied without a read only when it was
// last seen, without a read, at the state that apply left: one changed since, deleted, or
// replaced by another (perhaps not this owner's) is read first and its ownership checked.
func TestOnlyAnObjectSeenAsItWasLeftIsAppliedWithoutARead(t *testing.T) {
	for name, tc := range map[string]struct {
		c      Cluster
		seen   sightings
		direct bool
	}{
		"management, the watch holds its state":         {c: management, seen: sightings{versions: heldVersions{"b": "3"}}, direct: true},
		"management, changed since":                     {c: management, seen: sightings{versions: heldVersions{"b": "4"}}},
		"management, out of the watch":                  {c: management, seen: sightings{versions: heldVersions{}}},
		"management, no watch":                          {c: management},
		"hosted, listed at its state":                   {c: hosted, seen: sightings{hosted: true, listed: map[Key]seenAt{{GK: configMapKind.GroupKind(), Namespace: "ns", Name: "b"}: {resourceVersion: "3", uid: "b", uidKnown: true}}}, direct: true},
		"hosted, listed with another UID: replaced":     {c: hosted, seen: sightings{hosted: true, listed: map[Key]seenAt{{GK: configMapKind.GroupKind(), Namespace: "ns", Name: "b"}: {resourceVersion: "3", uid: "other", uidKnown: true}}}},
		"hosted, not listed: gone, or not this owner's": {c: hosted, seen: sightings{hosted: true}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			l := newLedger(10)
			l.tell(tc.c, []Write{{Desired: desired("b", 1), Live: Observed{ResourceVersion: "3", UID: "b"}}})
			advice := []Advice{{}}
			l.advise(tc.c, []Desired{desired("b", 2)}, advice, tc.seen)
			if tc.direct {
				g.Expect(advice[0].UID).To(Equal(types.UID("b")))
			} else {
				g.Expect(advice[0].UID).To(BeEmpty())
			}
		})
	}
}

func TestTheLedgerStartsOverPastItsBound(t *testing.T) {
	g := NewWithT(t)
	l := newLedger(2)
	for _, name := range []string{"a", "b", "c"} {
		l.tell(management, []Write{{Desired: desired(name, 1), Live: at("1")}})
	}
	g.Expect(l.entries).To(HaveLen(1))
}

// An object seen at the resourceVersion of the verdict but with another UID is another object:
// the hosted cluster behind a namespace was replaced, and its resourceVersions started over.
func TestAVerdictNeedsTheSameObject(t *testing.T) {
	g := NewWithT(t)
	c := hosted
	c.Rules = [32]byte{1}
	l := newLedger(10)
	a := desired("a", 1)
	owner := c.Owner.id()
	live := Observed{ResourceVersion: "5", UID: "first"}
	l.tell(c, []Write{{Desired: a, Live: live}})
	_, judged := l.verdict(c, owner, &a)
	g.Expect(judged).To(BeFalse(), "not judged yet")
	l.judgedAvailable(ledgerKey{cluster: c.name(), object: a.key()}, owner, live, c.Rules)
	g.Expect(l.availableAt(c, owner, &a, seenAt{resourceVersion: "5", uid: "first", uidKnown: true})).To(BeTrue())
	g.Expect(l.availableAt(c, owner, &a, seenAt{resourceVersion: "5"})).To(BeTrue(), "a watch that does not tell the UID")
	g.Expect(l.availableAt(c, owner, &a, seenAt{resourceVersion: "5", uid: "second", uidKnown: true})).To(BeFalse())
	g.Expect(l.availableAt(c, owner, &a, seenAt{resourceVersion: "5", uidKnown: true})).To(BeFalse(), "a list item without a UID")
	g.Expect(l.availableAt(c, owner, &a, seenAt{resourceVersion: "6", uid: "first", uidKnown: true})).To(BeFalse())
	advice := []Advice{{}}
	l.advise(c, []Desired{a}, advice, sightings{hosted: true})
	g.Expect(advice[0].Recorded).To(Equal(live), "an object read at another UID is not the one recorded")
}
