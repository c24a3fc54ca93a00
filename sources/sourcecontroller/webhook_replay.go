package sourcecontroller

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultWebhookReplayWindow is how long a webhook call's body is remembered when
// ReplayWindow is unset: a replay of it within the window costs no GitSource patch.
const DefaultWebhookReplayWindow = 10 * time.Minute

// maxReplayEntries bounds the calls remembered: 4,096 digests of 32 bytes and their times.
const maxReplayEntries = 4096

// replayCache remembers, for a window, the webhook calls that requested a poll: by GitSource
// and the SHA-256 of the body the signature covers. A call whose body the same GitSource got
// within the window is a replay (a captured delivery sent again, or a forge's redelivery of
// one already handled): it is answered without a patch of the GitSource, which would cost a
// write and a fetch each time.
//
// Note: the key is the body, not the delivery id some forges send (X-GitHub-Delivery,
// X-Gitea-Delivery, X-Gitlab-Event-UUID): no forge signs its headers, so a replay could change
// the id at will, and a new push always has a new body (its commits). A caller that posts the
// same body for every poll (a generic X-Signature caller) must vary it, with a timestamp for
// example, to be heard more than once per window.
//
// Note: this is a cache against a cost, not state of a rollout (which lives on Kubernetes
// objects): a restarted replica forgets it and at worst patches once more, and each replica
// keeps its own. It is bounded in time and in size (maxReplayEntries, oldest dropped first);
// only authenticated calls are remembered, so an unauthenticated caller cannot fill it.
type replayCache struct {
	mu     sync.Mutex
	window time.Duration
	now    func() time.Time
	order  *list.List // of *replayEntry, oldest first
	byKey  map[[sha256.Size]byte]*list.Element
}

// replayEntry is one remembered call.
type replayEntry struct {
	key [sha256.Size]byte
	at  time.Time
}

// newReplayCache returns a cache remembering calls for window.
func newReplayCache(window time.Duration, now func() time.Time) *replayCache {
	return &replayCache{window: window, now: now, order: list.New(), byKey: map[[sha256.Size]byte]*list.Element{}}
}

// replayKey keys a call to the GitSource nn with body.
func replayKey(nn types.NamespacedName, body []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(nn.Namespace + "/" + nn.Name + "\x00"))
	h.Write(body)
	var key [sha256.Size]byte
	copy(key[:], h.Sum(nil))
	return key
}

// claim records key and returns true, or returns false when key was recorded within the
// window: the call is a replay.
func (c *replayCache) claim(key [sha256.Size]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.expireLocked(now)
	if _, ok := c.byKey[key]; ok {
		return false
	}
	c.byKey[key] = c.order.PushBack(&replayEntry{key: key, at: now})
	for c.order.Len() > maxReplayEntries {
		c.removeLocked(c.order.Front())
	}
	return true
}

// release forgets key: its call did not request the poll (the patch failed), so the forge's
// retry of it must be heard.
func (c *replayCache) release(key [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.removeLocked(el)
	}
}

// expireLocked drops the entries older than the window.
func (c *replayCache) expireLocked(now time.Time) {
	for el := c.order.Front(); el != nil && now.Sub(el.Value.(*replayEntry).at) >= c.window; el = c.order.Front() {
		c.removeLocked(el)
	}
}

// removeLocked drops el.
func (c *replayCache) removeLocked(el *list.Element) {
	delete(c.byKey, c.order.Remove(el).(*replayEntry).key)
}

// len returns the number of calls remembered.
func (c *replayCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
