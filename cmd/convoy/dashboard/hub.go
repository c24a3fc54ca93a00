package dashboard

import (
	"sync"
	"time"
)

// Hub tells the open pages that the cache changed. Informer events arrive in bursts (a rollout
// step updates dozens of Packages); the hub coalesces them so that views are recomputed at most
// once per delay.
type Hub struct {
	delay time.Duration

	mu      sync.Mutex
	gen     uint64
	changed chan struct{}
	pending bool
}

// NewHub returns a hub that publishes a change at most once per delay.
func NewHub(delay time.Duration) *Hub {
	return &Hub{delay: delay, changed: make(chan struct{})}
}

// Touch records that something changed; subscribers hear of it within the delay.
func (h *Hub) Touch() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending {
		return
	}
	h.pending = true
	time.AfterFunc(h.delay, h.publish)
}

// publish starts a new generation and wakes every subscriber of the previous one.
func (h *Hub) publish() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
	close(h.changed)
	h.changed = make(chan struct{})
	h.pending = false
}

// Current returns the generation and a channel closed when the next one starts.
func (h *Hub) Current() (uint64, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gen, h.changed
}
