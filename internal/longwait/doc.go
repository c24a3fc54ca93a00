// Package longwait keeps the long requeues of a controller (a settled object's next drift
// check, minutes away) out of controller-runtime's priority queue until they are due.
//
// The priority queue keeps each waiting item in a B-tree and wakes a goroutine for every item
// added to it and for every item that becomes ready, each wake walking the tree and starting
// a timer. At ten thousand settled Packages, each requeued once per spec.interval, that is
// several goroutine wakes per pass, and the fleet's steady profile put the queue at a tenth
// of the controller's CPU. A requeue of at least [MinDelay] waits here instead, on a wheel of
// one-second buckets: adding is a map write and an append, and one tick a second hands the
// items that are due to the priority queue, with the priority they were added with.
//
// Every other add (an event, a short requeue, a rate-limited retry) goes to the priority
// queue at once and drops the item's long wait: the pass it makes ends with a requeue of its
// own. A long wait added for an item that already waits here keeps the earlier of the two
// times and the higher priority, as the priority queue does. The wheel holds each item once,
// so its memory grows with the items, not with the adds. It counts ticks of the monotonic
// clock since it started, so a step of the wall clock moves no wait; a due item is handed
// over at most a second late, never early. The gauge convoy_requeue_wheel_items exports how
// many items wait, per controller.
//
// One difference remains: the priority queue merges a long requeue into a ready entry of the
// same item, and the wheel does not see the priority queue's entries. A pass that ends while
// an event has already queued the item again leaves its requeue here, so the item may get one
// more pass when that requeue is due, which goes through every step of a pass like any
// other.
package longwait
