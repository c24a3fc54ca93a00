package longwait

import (
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/convoy-gitops/convoy/test/kubetest"
)

// clock is a settable time for the wheel.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newTestQueue(t *testing.T) (*Queue[string], *clock) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	q := Wrap[string](priorityqueue.New[string]("test"), c.now)
	t.Cleanup(q.ShutDown)
	return q, c
}

// get returns the next ready item and its priority, or fails after a while.
func get(g *WithT, q *Queue[string]) (string, int) {
	type got struct {
		item     string
		priority int
	}
	ch := make(chan got, 1)
	go func() {
		item, priority, _ := q.GetWithPriority()
		ch <- got{item, priority}
	}()
	var r got
	g.Eventually(ch, 3*time.Second).Should(Receive(&r))
	q.Done(r.item)
	return r.item, r.priority
}

func TestALongRequeueWaitsOnTheWheelUntilDue(t *testing.T) {
	g := NewWithT(t)
	q, c := newTestQueue(t)
	q.AddWithOpts(priorityqueue.AddOpts{After: 10 * time.Minute, Priority: new(-100)}, "a")
	g.Consistently(q.Len, 1500*time.Millisecond).Should(BeZero(), "nothing is due yet")

	c.advance(10*time.Minute - time.Second)
	q.handOver()
	g.Expect(q.Len()).To(BeZero(), "a second early")

	c.advance(time.Second)
	item, priority := get(g, q)
	g.Expect(item).To(Equal("a"))
	g.Expect(priority).To(Equal(-100), "handed over with the priority it was added with")
	g.Expect(q.due).To(BeEmpty())
	g.Expect(q.buckets).To(BeEmpty())
}

func TestAnyOtherAddGoesAtOnceAndDropsTheLongWait(t *testing.T) {
	for name, opts := range map[string]priorityqueue.AddOpts{
		"event":        {},
		"short":        {After: time.Millisecond},
		"rate-limited": {RateLimited: true, After: time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			q, c := newTestQueue(t)
			q.AddWithOpts(priorityqueue.AddOpts{After: time.Minute}, "a")
			q.AddWithOpts(opts, "a")
			g.Expect(get(g, q)).To(Equal("a"))

			expectNoneDueIn(g, q, c, 2*time.Minute, "the long wait was dropped: one pass, not two")
		})
	}
}

func TestTheEarlierOfTwoLongWaitsHolds(t *testing.T) {
	g := NewWithT(t)
	q, c := newTestQueue(t)
	q.AddAfter("late-first", 10*time.Minute)
	q.AddAfter("late-first", time.Minute)
	q.AddAfter("early-first", time.Minute)
	q.AddAfter("early-first", 10*time.Minute)

	c.advance(time.Minute)
	q.handOver()
	g.Expect([]string{first(g, q), first(g, q)}).To(ConsistOf("late-first", "early-first"))

	expectNoneDueIn(g, q, c, 10*time.Minute, "each item was handed over once")
}

func TestAWaitBehindTheWheelIsHandedOverAtItsNextTick(t *testing.T) {
	g := NewWithT(t)
	q, c := newTestQueue(t)
	c.advance(time.Hour)
	q.handOver()
	c.advance(-time.Hour) // only a test clock goes back: the wheel counts monotonic time
	q.AddAfter("a", time.Minute)
	c.advance(time.Hour)
	q.handOver()
	g.Expect(q.Len()).To(BeZero(), "the wheel has not passed that tick yet")
	c.advance(time.Second)
	g.Expect(get(g, q)).To(Equal("a"))
}

func TestTheWheelHoldsEachItemOnce(t *testing.T) {
	g := NewWithT(t)
	q, _ := newTestQueue(t)
	for i := range 1000 {
		q.AddAfter("a", time.Hour-time.Duration(i)*time.Second) // earlier each time: replaced
		q.AddAfter("b", time.Hour)
		q.Add("b") // an event: dropped
	}
	g.Expect(q.Waiting()).To(Equal(1))
	g.Expect(q.buckets).To(HaveLen(1))
	g.Expect(get(g, q)).To(Equal("b"))
}

func TestTheEarlierWaitKeepsTheHigherPriority(t *testing.T) {
	g := NewWithT(t)
	q, c := newTestQueue(t)
	q.AddWithOpts(priorityqueue.AddOpts{After: time.Minute, Priority: new(-100)}, "a")
	q.AddWithOpts(priorityqueue.AddOpts{After: time.Hour, Priority: new(10)}, "a")
	c.advance(time.Minute)
	q.handOver()
	item, priority := get(g, q)
	g.Expect(item).To(Equal("a"))
	g.Expect(priority).To(Equal(10))
}

func TestShutDownStopsTheWheel(t *testing.T) {
	g := NewWithT(t)
	q, c := newTestQueue(t)
	q.AddAfter("a", time.Minute)
	q.ShutDown()
	q.ShutDown()
	q.AddAfter("b", time.Minute)
	c.advance(time.Hour)
	g.Expect(q.ShuttingDown()).To(BeTrue())
	g.Expect(q.Waiting()).To(BeZero(), "a shut-down wheel keeps nothing")
	g.Consistently(q.Len, 1500*time.Millisecond).Should(BeZero())
}

// first returns the next ready item.
func first(g *WithT, q *Queue[string]) string {
	item, _ := get(g, q)
	return item
}

func TestAClockJumpForwardHandsOverEverythingDue(t *testing.T) {
	g := NewWithT(t)
	q, c := newTestQueue(t)
	q.AddAfter("a", time.Minute)
	q.AddAfter("b", 24*time.Hour)
	q.AddAfter("c", 100*365*24*time.Hour)
	c.advance(10 * 365 * 24 * time.Hour)
	q.handOver()
	g.Expect([]string{first(g, q), first(g, q)}).To(ConsistOf("a", "b"))
	g.Expect(q.due).To(HaveKey("c"), "not due yet")
	g.Expect(q.buckets).To(HaveLen(1))
}

// expectNoneDueIn moves the clock by d and expects the wheel to hand nothing over.
func expectNoneDueIn(g *WithT, q *Queue[string], c *clock, d time.Duration, why string) {
	c.advance(d)
	q.handOver()
	g.Consistently(q.Len, 1500*time.Millisecond).Should(BeZero(), why)
}

// TestNewQueueExportsTheWheelsSize checks the gauge of the items waiting on the wheel, per
// controller, and that a queue shut down is no longer exported.
func TestNewQueueExportsTheWheelsSize(t *testing.T) {
	g := NewWithT(t)
	const controller = "wheel-metric-test"
	q := NewQueue(controller, workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "settled"}}, time.Minute)
	q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "retried"}}, time.Second)

	g.Expect(wheelItems(g, controller)).To(Equal([]float64{1}), "only the long requeue waits on the wheel")
	q.ShutDown()
	g.Expect(wheelItems(g, controller)).To(BeEmpty(), "a queue shut down is not exported")
}

// wheelItems returns the values of convoy_requeue_wheel_items for controller.
func wheelItems(g *WithT, controller string) []float64 {
	return kubetest.ControllerMetric(g, "convoy_requeue_wheel_items", controller)
}
