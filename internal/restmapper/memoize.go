package restmapper

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Memoize returns next with its RESTMapping answers kept: the first successful answer for a
// group, kind and versions is the answer from then on. Failures are not kept, so that next
// can discover a kind installed later. A kept answer goes stale only where next's own would:
// a custom resource's scope and plural cannot change, and a dynamic mapper keeps what it
// discovered too. The other methods go to next.
func Memoize(next meta.RESTMapper) meta.RESTMapper {
	return &memoized{RESTMapper: next}
}

type memoized struct {
	meta.RESTMapper
	// mappings holds *meta.RESTMapping by mappingKey.
	mappings sync.Map
}

// RESTMapping returns the kept answer for gk and versions, else next's, kept when it succeeds.
// Each caller gets its own copy.
func (m *memoized) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := mappingKey(gk, versions)
	if kept, ok := m.mappings.Load(key); ok {
		mapping := *kept.(*meta.RESTMapping)
		return &mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	kept := *mapping
	m.mappings.Store(key, &kept)
	return mapping, nil
}

// mappingKey names a question to RESTMapping.
func mappingKey(gk schema.GroupKind, versions []string) string {
	return gk.Group + "/" + gk.Kind + "/" + strings.Join(versions, ",")
}
