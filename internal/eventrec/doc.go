// Package eventrec records convoy's events in the cluster (events.k8s.io/v1): one Event for
// each distinct thing a controller reports.
//
// client-go's events library folds every event about the same object with the same type,
// reason and action into one series, whatever its note: the first note stays and later ones only
// raise its count. convoy's notes are what tell its events apart (a rollout pass that sees two
// Packages fail reports "HostedCluster a: …" and "HostedCluster b: …" with one reason), so a
// Recorder keys a series by the note too: an event repeats only when it says the same thing
// about the same object. Annotations are no part of what an event says: a repeat that carries a
// newer convoy.dev/revision counts on the Event of the first. Notes that vary from pass to pass
// (an error naming a changing port) make one Event per pass, within the object's budget.
//
// Writes happen only when an event is recorded, never on a timer. An event's first repeat marks
// it a series; later repeats write the count at most once per SeriesUpdateInterval. So the
// count of a series that stops repeating may miss the repeats of its last interval, and in
// exchange a controller at rest writes nothing (client-go closes each series with a write six
// minutes after its last repeat).
//
// Bounds: an object gets at most Burst new Events of each type at once, then one per Refill, as
// client-go's older recorder allowed (a repeat only counts on its Event); past that they are
// dropped and logged. Normal and Warning Events have separate budgets, so a rollout that
// reported the progress of many clusters can still say that it stopped. A note is cut to the API's 1 KiB limit. The queue holds QueueSize events and drops new
// ones when full, so recording never blocks a reconcile. The series cache remembers CacheSize
// events, each for SeriesWindow after its last occurrence. Delivery is best effort: a write that
// fails for a transient reason is tried Attempts times in all, each within WriteTimeout, then
// dropped and logged. A Provider stops before the reconcilers: it writes what is queued then for
// at most DrainTimeout, and what they record afterwards is lost.
package eventrec
