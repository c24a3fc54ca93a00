package engine

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// scopes remembers which kinds of the management cluster are namespaced. Asking the REST
// mapper merges the mappings of every API group and allocates a few KiB each time: once per
// object per pass, it was most of what a settled Package's pass allocated.
//
// A remembered answer can be stale: a CustomResourceDefinition deleted and created again with
// the other scope, which the mapper learns on its next reload. So remembered answers only
// serve to find the quiet objects of a pass, which are neither read nor written (an object
// whose kind changed scope is not where the watch saw it, so it is not quiet); every object a
// pass reads or writes, and every object a remembered answer would refuse, is placed with
// the mapper's current answer, which is remembered in turn. Errors are never remembered. The
// kinds of the management cluster bound the map. Hosted clusters come and go, and no watch
// tells when their objects change: they always ask their own mapper.
type scopes struct {
	mu         sync.RWMutex
	namespaced map[schema.GroupVersionKind]bool
}

func newScopes() *scopes {
	return &scopes{namespaced: map[schema.GroupVersionKind]bool{}}
}

// isNamespaced reports whether obj's kind is namespaced in c: the mapper's current answer
// when fresh is set, else the one remembered if there is one.
func (s *scopes) isNamespaced(c *cluster, obj *unstructured.Unstructured, fresh bool) (bool, error) {
	if c.hosted() {
		return c.client.IsObjectNamespaced(obj)
	}
	gvk := obj.GroupVersionKind()
	if !fresh {
		s.mu.RLock()
		namespaced, ok := s.namespaced[gvk]
		s.mu.RUnlock()
		if ok {
			return namespaced, nil
		}
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
