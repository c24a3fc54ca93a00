package longwait

import (
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// MinDelay is the shortest requeue that waits on the wheel; shorter ones go to the priority
// queue, which times them to the millisecond.
const MinDelay = 10 * time.Second

// tick is the wheel's resolution: a due item is handed over at most this late, never early.
const tick = time.Second

// Queue is a priority queue whose long requeues wait on a wheel of one-second buckets.
type Queue[T comparable] struct {
	priorityqueue.PriorityQueue[T]

	// now reads the time; the wheel counts ticks since epoch, so that it follows the
	// monotonic clock as the priority queue does, and a step of the wall clock moves nothing.
	now   func() time.Time
	epoch time.Time
	stop  chan struct{}
	once  sync.Once

	mu sync.Mutex
	// due holds the tick each waiting item is due at; buckets hold, per tick, its items and
	// their priorities. Both hold each waiting item once.
	due     map[T]int64
	buckets map[int64]map[T]*int
	// next is the first tick not handed over yet.
	next    int64
	stopped bool

	// unexport, when set, stops exporting the wheel's size; the queue calls it on shutdown.
	unexport func()
}

// NewQueue is a constructor for controller.Options.NewQueue: controller-runtime's priority
// queue, with the long requeues on a wheel.
func NewQueue(controllerName string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	inner := priorityqueue.New(controllerName, func(o *priorityqueue.Opts[reconcile.Request]) {
		o.RateLimiter = rateLimiter
	})
	q := Wrap(inner, time.Now)
	wheels.add(controllerName, q)
	q.unexport = func() { wheels.remove(q) }
	return q
}

// Wrap starts the wheel of inner, reading the time from now, and returns the queue; ShutDown
// stops it.
func Wrap[T comparable](inner priorityqueue.PriorityQueue[T], now func() time.Time) *Queue[T] {
	q := &Queue[T]{PriorityQueue: inner, now: now, epoch: now(), stop: make(chan struct{}),
		due: map[T]int64{}, buckets: map[int64]map[T]*int{}}
	go q.run()
	return q
}

// AddWithOpts keeps a long requeue on the wheel and hands any other add to the priority queue,
// dropping the items' long waits.
func (q *Queue[T]) AddWithOpts(o priorityqueue.AddOpts, items ...T) {
	if !q.wait(o, items) {
		q.PriorityQueue.AddWithOpts(o, items...)
	}
}

// wait puts items on the wheel for o.After, dropping their long waits instead when o is not a
// long requeue. It reports whether it put them there: not when the queue is shut down.
func (q *Queue[T]) wait(o priorityqueue.AddOpts, items []T) bool {
	long := !o.RateLimited && o.After >= MinDelay
	elapsed := q.now().Add(o.After).Sub(q.epoch)
	at := int64((elapsed + tick - 1) / tick) // rounded up: never handed over early
	q.mu.Lock()
	defer q.mu.Unlock()
	at = max(at, q.next)
	for _, item := range items {
		was, waiting := q.due[item]
		switch {
		case !long || q.stopped:
			q.remove(item, was, waiting)
		case waiting && was <= at: // the earlier wait holds, with the higher priority
			q.buckets[was][item] = higher(q.buckets[was][item], o.Priority)
		default:
			q.remove(item, was, waiting)
			q.put(item, at, o.Priority)
		}
	}
	return long && !q.stopped
}

// put makes item wait for tick at.
func (q *Queue[T]) put(item T, at int64, priority *int) {
	q.due[item] = at
	if q.buckets[at] == nil {
		q.buckets[at] = map[T]*int{}
	}
	q.buckets[at][item] = priority
}

// remove drops item's wait for tick at, if waiting.
func (q *Queue[T]) remove(item T, at int64, waiting bool) {
	if !waiting {
		return
	}
	delete(q.due, item)
	delete(q.buckets[at], item)
	if len(q.buckets[at]) == 0 {
		delete(q.buckets, at)
	}
}

// higher returns the higher of two priorities, nil meaning 0.
func higher(a, b *int) *int {
	if b != nil && (a == nil || *b > *a) {
		return b
	}
	return a
}

// Add hands item to the priority queue at once.
func (q *Queue[T]) Add(item T) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

// AddAfter waits for after, on the wheel when it is long.
func (q *Queue[T]) AddAfter(item T, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

// AddRateLimited hands item to the priority queue's rate limiter.
func (q *Queue[T]) AddRateLimited(item T) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// ShutDown stops the wheel, dropping what waits on it, and the priority queue, once.
func (q *Queue[T]) ShutDown() {
	q.once.Do(func() {
		q.halt()
		q.PriorityQueue.ShutDown()
	})
}

// ShutDownWithDrain stops the wheel, dropping what waits on it, and drains the priority queue,
// once.
func (q *Queue[T]) ShutDownWithDrain() {
	q.once.Do(func() {
		q.halt()
		q.PriorityQueue.ShutDownWithDrain()
	})
}

// halt stops the wheel, empties it and stops exporting its size.
func (q *Queue[T]) halt() {
	close(q.stop)
	if q.unexport != nil {
		q.unexport()
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopped = true
	clear(q.due)
	clear(q.buckets)
}

// Waiting returns the number of items waiting on the wheel.
func (q *Queue[T]) Waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.due)
}

// run hands the due items over every tick until the queue shuts down.
func (q *Queue[T]) run() {
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-q.stop:
			return
		case <-ticker.C:
			q.handOver()
		}
	}
}

// handOver gives the priority queue the items due by now.
func (q *Queue[T]) handOver() {
	for _, r := range q.takeDue(int64(q.now().Sub(q.epoch) / tick)) {
		q.PriorityQueue.AddWithOpts(priorityqueue.AddOpts{Priority: r.priority}, r.item)
	}
}

// ready is an item handed over, with its priority.
type ready[T comparable] struct {
	item     T
	priority *int
}

// takeDue removes from the wheel the items due at the ticks up to now.
func (q *Queue[T]) takeDue(now int64) []ready[T] {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []ready[T]
	for _, at := range q.dueTicks(now) {
		for item, priority := range q.buckets[at] {
			delete(q.due, item)
			out = append(out, ready[T]{item: item, priority: priority})
		}
		delete(q.buckets, at)
	}
	q.next = max(q.next, now+1)
	return out
}

// dueTicks returns, in order, the ticks up to now that have a bucket. When more ticks passed
// than the wheel has buckets (the process was stopped a long while), it looks at the buckets
// rather than at each tick.
func (q *Queue[T]) dueTicks(now int64) []int64 {
	var ticks []int64
	if now-q.next > int64(len(q.buckets)) {
		for at := range q.buckets {
			if at <= now {
				ticks = append(ticks, at)
			}
		}
		slices.Sort(ticks)
		return ticks
	}
	for at := q.next; at <= now; at++ {
		if _, ok := q.buckets[at]; ok {
			ticks = append(ticks, at)
		}
	}
	return ticks
}
