package eventrec

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/test/fleet"
)

var env *fleet.Fleet

func TestMain(m *testing.M) { fleet.Main(m, &env, fleet.Options{}, nil) }

// clock is a settable time for a Provider.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// started runs a Provider on the suite's API server until the test ends, with a ConfigMap in a
// namespace of its own for the events to be about.
func started(t *testing.T) (*Provider, *clock, *corev1.ConfigMap) {
	t.Helper()
	ns := env.NewNamespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "subject"}}
	NewWithT(t).Expect(env.Client.Create(context.Background(), cm)).To(Succeed())
	c := &clock{now: time.Now()}
	p := NewProvider(Options{Client: env.Client, Scheme: env.Scheme, Log: logr.Discard(), Now: c.Now})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return p, c, cm
}

// eventsIn lists the Events of a namespace.
func eventsIn(g Gomega, ns string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// queueEmpty waits until the Provider has taken every queued event.
func queueEmpty(g *WithT, p *Provider) {
	g.Eventually(func() int { return len(p.queue) }).Should(BeZero())
}

func TestEventsThatSayDifferentThingsAreDifferentEvents(t *testing.T) {
	g := NewWithT(t)
	p, _, cm := started(t)
	rec := p.Recorder("convoy-rollout")
	rec.Eventf(cm, nil, corev1.EventTypeWarning, "PackageFailed", "Reconcile", "HostedCluster %s: broken", "a")
	rec.Eventf(cm, nil, corev1.EventTypeWarning, "PackageFailed", "Reconcile", "HostedCluster %s: broken", "b")
	g.Eventually(func(g Gomega) {
		notes := []string{}
		for _, e := range eventsIn(g, cm.Namespace) {
			notes = append(notes, e.Note)
			g.Expect(e.Series).To(BeNil())
			g.Expect(e.Regarding.Name).To(Equal("subject"))
			g.Expect(e.ReportingController).To(Equal("convoy-rollout"))
		}
		g.Expect(notes).To(ConsistOf("HostedCluster a: broken", "HostedCluster b: broken"))
	}).Should(Succeed())
}

func TestARepeatedEventIsOneSeriesWrittenAtMostOncePerInterval(t *testing.T) {
	g := NewWithT(t)
	p, c, cm := started(t)
	rec := p.Recorder("convoy-package")
	count := func(g Gomega) int32 {
		items := eventsIn(g, cm.Namespace)
		g.Expect(items).To(HaveLen(1))
		if items[0].Series == nil {
			return 1
		}
		return items[0].Series.Count
	}
	fail := func() { rec.Eventf(cm, nil, corev1.EventTypeWarning, "Failed", "Reconcile", "same") }
	fail()
	g.Eventually(count).Should(BeEquivalentTo(1))
	c.Advance(time.Second)
	fail()
	g.Eventually(count).Should(BeEquivalentTo(2), "the first repeat is written at once")
	c.Advance(time.Second)
	fail()
	queueEmpty(g, p)
	g.Consistently(count, "300ms").Should(BeEquivalentTo(2), "a repeat within the interval is only counted")
	// Repeats keep the series open as long as each comes within SeriesWindow of the last.
	for range 2 {
		c.Advance(SeriesUpdateInterval / 2)
		fail()
	}
	g.Eventually(count).Should(BeEquivalentTo(5), "the next repeat after the interval writes the count")
}

func TestARepeatAfterTheWindowIsANewEvent(t *testing.T) {
	g := NewWithT(t)
	p, c, cm := started(t)
	rec := p.Recorder("convoy-package")
	rec.Eventf(cm, nil, corev1.EventTypeNormal, "Progressed", "Reconcile", "same")
	g.Eventually(func(g Gomega) { g.Expect(eventsIn(g, cm.Namespace)).To(HaveLen(1)) }).Should(Succeed())
	c.Advance(SeriesWindow + time.Second)
	rec.Eventf(cm, nil, corev1.EventTypeNormal, "Progressed", "Reconcile", "same")
	g.Eventually(func(g Gomega) {
		items := eventsIn(g, cm.Namespace)
		g.Expect(items).To(HaveLen(2))
		g.Expect(items).To(HaveEach(HaveField("Series", BeNil())))
	}).Should(Succeed())
}

func TestARepeatOfADeletedEventCreatesItAgain(t *testing.T) {
	g := NewWithT(t)
	p, c, cm := started(t)
	rec := p.Recorder("convoy-package")
	rec.Eventf(cm, nil, corev1.EventTypeWarning, "Failed", "Reconcile", "same")
	var first eventsv1.Event
	g.Eventually(func(g Gomega) {
		items := eventsIn(g, cm.Namespace)
		g.Expect(items).To(HaveLen(1))
		first = items[0]
	}).Should(Succeed())
	g.Expect(env.Client.Delete(context.Background(), &first)).To(Succeed())
	c.Advance(time.Second)
	rec.Eventf(cm, nil, corev1.EventTypeWarning, "Failed", "Reconcile", "same")
	var second eventsv1.Event
	g.Eventually(func(g Gomega) {
		items := eventsIn(g, cm.Namespace)
		g.Expect(items).To(HaveLen(1))
		second = items[0]
		g.Expect(second.Name).NotTo(Equal(first.Name))
		g.Expect(second.Note).To(Equal("same"))
		g.Expect(second.Series).To(BeNil())
	}).Should(Succeed())
	c.Advance(time.Second)
	rec.Eventf(cm, nil, corev1.EventTypeWarning, "Failed", "Reconcile", "same")
	g.Eventually(func(g Gomega) {
		items := eventsIn(g, cm.Namespace)
		g.Expect(items).To(HaveLen(1))
		g.Expect(items[0].Name).To(Equal(second.Name))
		g.Expect(items[0].Series).NotTo(BeNil())
		g.Expect(items[0].Series.Count).To(BeEquivalentTo(2), "the new Event starts a series of its own")
	}).Should(Succeed())
}

func TestEventsAboutClusterScopedObjectsLandInDefault(t *testing.T) {
	g := NewWithT(t)
	p, _, cm := started(t)
	ns := &corev1.Namespace{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: cm.Namespace}, ns)).To(Succeed())
	p.Recorder("convoy-rollout").Eventf(ns, nil, corev1.EventTypeNormal, "Progressed", "Reconcile", "about %s", ns.Name)
	g.Eventually(func(g Gomega) {
		found := false
		for _, e := range eventsIn(g, metav1.NamespaceDefault) {
			found = found || (e.Regarding.Name == ns.Name && e.Note == "about "+ns.Name)
		}
		g.Expect(found).To(BeTrue())
	}).Should(Succeed())
}

func TestHostileNotesAndNamesAreCutToTheAPIsLimits(t *testing.T) {
	g := NewWithT(t)
	p, _, cm := started(t)
	// The name is cut after its 235th byte, a dash, which no part of an Event's name ends with.
	long := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace,
		Name: strings.Repeat("a", 234) + "-" + strings.Repeat("b", 18)}}
	g.Expect(env.Client.Create(context.Background(), long)).To(Succeed())
	rec := p.Recorder("convoy-package")
	// An odd prefix puts a cut in the middle of a character; invalid bytes would triple in JSON.
	rec.Eventf(long, nil, corev1.EventTypeWarning, "Failed", "Reconcile", "%s", "x"+strings.Repeat("é", 4000))
	rec.Eventf(long, nil, corev1.EventTypeWarning, "Invalid", "Reconcile", "%s", strings.Repeat("\xff", 4000))
	g.Eventually(func(g Gomega) {
		items := eventsIn(g, cm.Namespace)
		g.Expect(items).To(HaveLen(2))
		for _, e := range items {
			g.Expect(len(e.Note)).To(BeNumerically("<=", maxNoteBytes))
			g.Expect(utf8.ValidString(e.Note)).To(BeTrue())
			g.Expect(e.Regarding.Name).To(Equal(long.Name))
		}
	}).Should(Succeed())
}

func TestAnObjectNameThatIsNoSubdomainGivesARandomEventName(t *testing.T) {
	g := NewWithT(t)
	p := NewProvider(Options{Scheme: clientgoscheme.Scheme, Log: logr.Discard()})
	g.Expect(validation.IsDNS1123Subdomain(p.eventName("system:controller"))).To(BeEmpty())
	g.Expect(validation.IsDNS1123Subdomain(p.eventName(""))).To(BeEmpty())
	g.Expect(p.eventName("a")).NotTo(Equal(p.eventName("a")), "names taken within a nanosecond")
}

func TestRecordingNeverBlocksWhenTheQueueIsFull(t *testing.T) {
	g := NewWithT(t)
	p := NewProvider(Options{Scheme: clientgoscheme.Scheme, Log: logr.Discard()}) // never started
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}}
	rec := p.Recorder("convoy-package")
	rec.Eventf(cm, nil, "Odd", "Progressed", "Reconcile", "x")
	g.Expect(p.queue).To(BeEmpty(), "an event of an unknown type is refused")
	for i := range QueueSize + 10 {
		rec.Eventf(cm, nil, corev1.EventTypeNormal, "Progressed", "Reconcile", "%d", i)
	}
	g.Expect(p.queue).To(HaveLen(QueueSize))
	g.Expect(p.dropped.Load()).To(BeEquivalentTo(10))
}

func TestAnObjectGetsAtMostItsBudgetOfNewEvents(t *testing.T) {
	g := NewWithT(t)
	p, c, cm := started(t)
	rec := p.Recorder("convoy-rollout")
	for i := range Burst + 5 {
		rec.Eventf(cm, nil, corev1.EventTypeWarning, "PackageFailed", "Reconcile", "HostedCluster %d: broken", i)
	}
	queueEmpty(g, p)
	g.Eventually(func(g Gomega) { g.Expect(eventsIn(g, cm.Namespace)).To(HaveLen(Burst)) }).Should(Succeed())
	g.Consistently(func(g Gomega) { g.Expect(eventsIn(g, cm.Namespace)).To(HaveLen(Burst)) }, "300ms").Should(Succeed())
	g.Expect(p.overBudget.Load()).To(BeEquivalentTo(5))

	c.Advance(Refill)
	rec.Eventf(cm, nil, corev1.EventTypeWarning, "PackageFailed", "Reconcile", "HostedCluster %d: broken", Burst+5)
	rec.Eventf(cm, nil, corev1.EventTypeWarning, "PackageFailed", "Reconcile", "HostedCluster %d: broken", Burst+6)
	g.Eventually(func(g Gomega) { g.Expect(eventsIn(g, cm.Namespace)).To(HaveLen(Burst + 1)) }).Should(Succeed())
	// Note: the second event may still be in the writer when the first is listed.
	g.Eventually(p.overBudget.Load).Should(BeEquivalentTo(6), "one more per Refill")
	g.Consistently(func(g Gomega) { g.Expect(eventsIn(g, cm.Namespace)).To(HaveLen(Burst + 1)) }, "300ms").Should(Succeed())
}

func TestNormalEventsNeverSpendTheBudgetOfWarnings(t *testing.T) {
	g := NewWithT(t)
	p, _, cm := started(t)
	rec := p.Recorder("convoy-rollout")
	for i := range Burst + 5 {
		rec.Eventf(cm, nil, corev1.EventTypeNormal, "Progressed", "Reconcile", "HostedCluster %d: progressed", i)
	}
	rec.Eventf(cm, nil, corev1.EventTypeWarning, "Stalled", "Reconcile", "Rollout stopped")
	queueEmpty(g, p)
	g.Eventually(func(g Gomega) { g.Expect(eventsIn(g, cm.Namespace)).To(HaveLen(Burst + 1)) }).Should(Succeed())
	g.Expect(p.overBudget.Load()).To(BeEquivalentTo(5), "only the Normal events past the burst are dropped")
}

func TestBudgetsForgetAnObjectWhenFull(t *testing.T) {
	g := NewWithT(t)
	b, now := newBudgets(), time.Now()
	for i := range CacheSize + 10 {
		g.Expect(b.take(types.UID(fmt.Sprint(i)), corev1.EventTypeNormal, now)).To(BeTrue())
	}
	g.Expect(b.left).To(HaveLen(CacheSize))
}
