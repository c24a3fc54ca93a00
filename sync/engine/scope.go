package engine

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// scopes remembers which kinds of the management cluster are namespaced. Asking the REST
// mapper merges the mappings of every API group and allocates a few KiB each time: once per
// object per pass, it was most of what a settled Package's pass allocated. Only answers are
// kept, never errors (an unknown kind is asked again), so a kind is as fresh as the mapper,
// which itself answers from the discovery it loaded and reloads a group only on a miss.
// The kinds of the management cluster bound the map. Hosted clusters come and go, and their
// objects are read on every pass anyway: they ask their own mapper.
type scopes struct {
	mu         sync.RWMutex
	namespaced map[schema.GroupVersionKind]bool
}

func newScopes() *scopes {
	return &scopes{namespaced: map[schema.GroupVersionKind]bool{}}
}

// isNamespaced reports whether obj's kind is namespaced in c.
func (s *scopes) isNamespaced(c *cluster, obj *unstructured.Unstructured) (bool, error) {
	if c.hosted() {
		return c.client.IsObjectNamespaced(obj)
	}
	gvk := obj.GroupVersionKind()
	s.mu.RLock()
	namespaced, ok := s.namespaced[gvk]
	s.mu.RUnlock()
	if ok {
		return namespaced, nil
	}
	namespaced, err := c.client.IsObjectNamespaced(obj)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	s.namespaced[gvk] = namespaced
	s.mu.Unlock()
	return namespaced, nil
}
