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

// tick is the wheel's resolution: a due item is handed over at most this late.
const tick = time.Second

// Queue is a priority queue whose long requeues wait on a wheel of one-second buckets.
type Queue[T comparable] struct {
	priorityqueue.PriorityQueue[T]

	now  func() time.Time
	stop chan struct{}
	once sync.Once

	mu sync.Mutex
	// due holds, per waiting item, the second it is due and its priority; buckets the items
	// due in each second. An item is handed over only from the bucket of the second due
	// holds for it, so that a wait replaced by an earlier one or dropped leaves no trace.
	due     map[T]wait
	buckets map[int64][]T
	// next is the first second not handed over yet.
	next int64
}

// wait is when an item is due, and the priority it was added with.
type wait struct {
	second   int64
	priority *int
}

// NewQueue returns a constructor for controller.Options.NewQueue: controller-runtime's
// priority queue, with the long requeues on a wheel.
func NewQueue(controllerName string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	inner := priorityqueue.New(controllerName, func(o *priorityqueue.Opts[reconcile.Request]) {
		o.RateLimiter = rateLimiter
	})
	return Wrap(inner, time.Now)
}

// Wrap starts the wheel of inner, reading the time from now, and returns the queue; ShutDown
// stops it.
func Wrap[T comparable](inner priorityqueue.PriorityQueue[T], now func() time.Time) *Queue[T] {
	q := &Queue[T]{PriorityQueue: inner, now: now, stop: make(chan struct{}),
		due: map[T]wait{}, buckets: map[int64][]T{}, next: now().Unix()}
	go q.run()
	return q
}

// AddWithOpts keeps a long requeue on the wheel and hands any other add to the priority queue,
// dropping the items' long waits.
func (q *Queue[T]) AddWithOpts(o priorityqueue.AddOpts, items ...T) {
	if o.RateLimited || o.After < MinDelay {
		q.drop(items)
		q.PriorityQueue.AddWithOpts(o, items...)
		return
	}
	second := q.now().Add(o.After).Unix()
	q.mu.Lock()
	defer q.mu.Unlock()
	second = max(second, q.next) // a clock set back must not strand the wait behind the wheel
	for _, item := range items {
		if w, ok := q.due[item]; ok && w.second <= second {
			continue
		}
		q.due[item] = wait{second: second, priority: o.Priority}
		q.buckets[second] = append(q.buckets[second], item)
	}
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
		close(q.stop)
		q.PriorityQueue.ShutDown()
	})
}

// ShutDownWithDrain stops the wheel, dropping what waits on it, and drains the priority queue,
// once.
func (q *Queue[T]) ShutDownWithDrain() {
	q.once.Do(func() {
		close(q.stop)
		q.PriorityQueue.ShutDownWithDrain()
	})
}

// drop forgets the long waits of items.
func (q *Queue[T]) drop(items []T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, item := range items {
		delete(q.due, item)
	}
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

// handOver gives the priority queue the items due up to now.
func (q *Queue[T]) handOver() {
	for _, r := range q.takeDue(q.now().Unix()) {
		q.PriorityQueue.AddWithOpts(priorityqueue.AddOpts{Priority: r.priority}, r.item)
	}
}

// ready is an item handed over, with its priority.
type ready[T comparable] struct {
	item     T
	priority *int
}

// takeDue removes from the wheel the items due in the seconds up to now.
func (q *Queue[T]) takeDue(now int64) []ready[T] {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []ready[T]
	for _, second := range q.dueSeconds(now) {
		for _, item := range q.buckets[second] {
			if w, ok := q.due[item]; ok && w.second == second {
				delete(q.due, item)
				out = append(out, ready[T]{item: item, priority: w.priority})
			}
		}
		delete(q.buckets, second)
	}
	q.next = max(q.next, now+1)
	return out
}

// dueSeconds returns, in order, the seconds up to now that have a bucket. After a jump of the
// clock longer than the wheel has buckets, it looks at the buckets rather than at each second.
func (q *Queue[T]) dueSeconds(now int64) []int64 {
	var seconds []int64
	if now-q.next > int64(len(q.buckets)) {
		for second := range q.buckets {
			if second <= now {
				seconds = append(seconds, second)
			}
		}
		slices.Sort(seconds)
		return seconds
	}
	for second := q.next; second <= now; second++ {
		if _, ok := q.buckets[second]; ok {
			seconds = append(seconds, second)
		}
	}
	return seconds
}
