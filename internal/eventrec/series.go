package eventrec

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// seriesKey is what two occurrences share when one repeats the other: everything an Event
// says but its time, name and annotations.
type seriesKey struct {
	regarding, related                          corev1.ObjectReference
	eventType, reason, action, controller, note string
}

// keyOf returns ev's series key; the objects' resourceVersions are left out, as an object's
// status moves between two occurrences of the same event.
func keyOf(ev *eventsv1.Event) seriesKey {
	k := seriesKey{regarding: ev.Regarding, eventType: ev.Type, reason: ev.Reason, action: ev.Action,
		controller: ev.ReportingController, note: ev.Note}
	k.regarding.ResourceVersion = ""
	if ev.Related != nil {
		k.related = *ev.Related
		k.related.ResourceVersion = ""
	}
	return k
}

// occurrence is an Event the cluster holds, with the count of its series.
type occurrence struct {
	key      seriesKey
	event    *eventsv1.Event // as created: its namespace and name
	count    int32           // occurrences recorded
	last     time.Time       // the last occurrence
	lastSent time.Time       // when the count was last written, or tried
}

// seriesCache remembers the most recent occurrences, least recent evicted first. Only the
// writer goroutine uses it.
type seriesCache struct {
	size  int
	order *list.List // of *occurrence, most recent first
	index map[seriesKey]*list.Element
}

func newSeriesCache(size int) *seriesCache {
	return &seriesCache{size: size, order: list.New(), index: map[seriesKey]*list.Element{}}
}

// get returns the occurrence of key seen within SeriesWindow before now, or nil.
func (c *seriesCache) get(key seriesKey, now time.Time) *occurrence {
	el, ok := c.index[key]
	if !ok {
		return nil
	}
	o := el.Value.(*occurrence)
	if now.Sub(o.last) > SeriesWindow {
		c.remove(el)
		return nil
	}
	c.order.MoveToFront(el)
	return o
}

// put remembers o, evicting the least recent occurrence when full.
func (c *seriesCache) put(o *occurrence) {
	if el, ok := c.index[o.key]; ok {
		c.remove(el)
	}
	if c.order.Len() >= c.size {
		c.remove(c.order.Back())
	}
	c.index[o.key] = c.order.PushFront(o)
}

func (c *seriesCache) remove(el *list.Element) {
	delete(c.index, el.Value.(*occurrence).key)
	c.order.Remove(el)
}

// write records one occurrence: a new Event, or a repeat of one the cluster holds.
func (p *Provider) write(ctx context.Context, ev *eventsv1.Event) {
	key := keyOf(ev)
	now := ev.EventTime.Time
	if o := p.series.get(key, now); o != nil {
		p.repeat(ctx, o, now)
		return
	}
	if !p.budgets.take(ev.Regarding.UID, ev.Type, now) {
		if n := p.overBudget.Add(1); n == 1 || n%100 == 0 {
			p.opts.Log.Info("Dropped events: their object had too many", "dropped", n, "namespace", ev.Namespace,
				"regarding", ev.Regarding.Name, "reason", ev.Reason)
		}
		return
	}
	if err := p.retry(ctx, func(ctx context.Context, attempt int) error { return p.create(ctx, ev, attempt) }); err != nil {
		p.opts.Log.Error(err, "Dropped an event", "namespace", ev.Namespace, "regarding", ev.Regarding.Name, "reason", ev.Reason)
		return
	}
	p.series.put(&occurrence{key: key, event: ev, count: 1, last: now, lastSent: now})
}

// create creates ev, renaming it when its name is taken on the first attempt. On a later
// attempt the name can only be taken by an earlier attempt whose answer was lost: done.
func (p *Provider) create(ctx context.Context, ev *eventsv1.Event, attempt int) error {
	err := p.opts.Client.Create(ctx, ev.DeepCopy())
	if apierrors.IsAlreadyExists(err) {
		if attempt > 1 {
			return nil
		}
		ev.Name = p.eventName(ev.Regarding.Name)
	}
	return err
}

// repeat counts one more occurrence of o and writes the count on the first repeat and then at
// most once per SeriesUpdateInterval, whether the last write succeeded or not. An Event deleted
// meanwhile is created again.
func (p *Provider) repeat(ctx context.Context, o *occurrence, now time.Time) {
	o.count++
	o.last = now
	if o.count > 2 && now.Sub(o.lastSent) < SeriesUpdateInterval {
		return
	}
	o.lastSent = now
	err := p.retry(ctx, func(ctx context.Context, _ int) error { return p.patchSeries(ctx, o) })
	if apierrors.IsNotFound(err) {
		ev := o.event.DeepCopy()
		ev.Name, ev.EventTime, ev.Series = p.eventName(ev.Regarding.Name), metav1.NewMicroTime(now), nil
		o.event, o.count = ev, 1
		err = p.retry(ctx, func(ctx context.Context, attempt int) error { return p.create(ctx, ev, attempt) })
	}
	if err != nil {
		p.opts.Log.Error(err, "Could not count a repeated event", "namespace", o.event.Namespace,
			"regarding", o.event.Regarding.Name, "reason", o.event.Reason)
	}
}

// patchSeries writes o's count and last occurrence.
func (p *Provider) patchSeries(ctx context.Context, o *occurrence) error {
	series := eventsv1.EventSeries{Count: o.count, LastObservedTime: metav1.NewMicroTime(o.last)}
	body, err := json.Marshal(map[string]any{"series": series})
	if err != nil {
		return err
	}
	ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: o.event.Namespace, Name: o.event.Name}}
	return p.opts.Client.Patch(ctx, ev, client.RawPatch(types.MergePatchType, body))
}

// retry runs write until it succeeds, fails for a reason that will not pass, or has been tried
// Attempts times, each within WriteTimeout, waiting 100 ms before the second attempt and twice
// as long before each next.
func (p *Provider) retry(ctx context.Context, write func(ctx context.Context, attempt int) error) error {
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := p.attempt(ctx, write, attempt)
		if err == nil || attempt == Attempts || !transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// attempt runs write once within WriteTimeout.
func (p *Provider) attempt(ctx context.Context, write func(ctx context.Context, attempt int) error, attempt int) error {
	ctx, cancel := context.WithTimeout(ctx, WriteTimeout)
	defer cancel()
	return write(ctx, attempt)
}

// transient reports whether a write that failed with err may succeed when tried again: a name
// taken (create renamed the Event), the API server busy or failing, or no answer at all.
func transient(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return !errors.Is(err, context.Canceled)
	}
	return apierrors.IsAlreadyExists(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
}
