package eventrec

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Budget of new Events per object.
const (
	// Burst is how many Events an object may get at once.
	Burst = 25
	// Refill is the time after which an object may get one more.
	Refill = 5 * time.Minute
)

// budgets bounds the new Events each object gets of each type: Burst, then one per Refill. The
// Normal and the Warning Events of an object have a budget each, so that a burst of routine
// progress never silences a warning. A repeat of an Event only counts on it (its series), so it
// is not charged. Only the writer goroutine uses it; it remembers at most CacheSize budgets,
// forgetting one (which gets a full budget again) when full.
type budgets struct {
	left map[budgetKey]budget
}

// budgetKey names the budget of one object's Events of one type.
type budgetKey struct {
	uid       types.UID
	eventType string
}

// budget is what an object had left at a time.
type budget struct {
	tokens float64
	at     time.Time
}

func newBudgets() *budgets { return &budgets{left: map[budgetKey]budget{}} }

// take charges one new Event of eventType to the object uid at now, and reports whether its
// budget allowed it.
func (b *budgets) take(uid types.UID, eventType string, now time.Time) bool {
	key := budgetKey{uid: uid, eventType: eventType}
	left, known := b.left[key]
	if !known {
		if len(b.left) >= CacheSize {
			for other := range b.left {
				delete(b.left, other)
				break
			}
		}
		left = budget{tokens: Burst, at: now}
	}
	left.tokens = min(Burst, left.tokens+now.Sub(left.at).Seconds()/Refill.Seconds())
	left.at = now
	allowed := left.tokens >= 1
	if allowed {
		left.tokens--
	}
	b.left[key] = left
	return allowed
}
