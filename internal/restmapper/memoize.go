package restmapper

import (
	"strings"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KeepFor is how long Memoize keeps an answer: long enough that the thousands of applies of a
// rollout ask the mapper beneath a few times per kind, short enough that what that mapper
// learns at a reload (a CustomResourceDefinition deleted and created again with the other
// scope, a version no longer served) reaches every caller within seconds. The engine places
// the objects it writes with the mapper's current answer (sync/engine/prepare.go); this is the
// most an answer can lag behind it.
const KeepFor = 5 * time.Second

// Memoize returns next with its RESTMapping answers kept for KeepFor. Failures are not kept,
// so that next can discover a kind installed since. The other methods of apimeta.RESTMapper go
// to next; any other interface next has (a reset, say) is hidden: neither the manager's client
// and caches nor convoy asks for one.
func Memoize(next apimeta.RESTMapper) apimeta.RESTMapper {
	return &memoized{RESTMapper: next, now: time.Now, kept: map[mappingKey]keptMapping{}}
}

type memoized struct {
	apimeta.RESTMapper
	now func() time.Time

	mu   sync.RWMutex
	kept map[mappingKey]keptMapping
}

// mappingKey is a question to RESTMapping: a group and kind, and the versions asked, joined.
type mappingKey struct {
	gk       schema.GroupKind
	versions string
}

// keptMapping is an answer and until when it holds.
type keptMapping struct {
	mapping apimeta.RESTMapping
	until   time.Time
}

// RESTMapping returns the kept answer for gk and versions, else next's, kept when it succeeds.
// Each caller gets its own copy.
func (m *memoized) RESTMapping(gk schema.GroupKind, versions ...string) (*apimeta.RESTMapping, error) {
	key := mappingKey{gk: gk, versions: strings.Join(versions, ",")}
	now := m.now()
	m.mu.RLock()
	kept, ok := m.kept[key]
	m.mu.RUnlock()
	if ok && now.Before(kept.until) {
		mapping := kept.mapping
		return &mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.kept[key] = keptMapping{mapping: *mapping, until: now.Add(KeepFor)}
	m.mu.Unlock()
	return mapping, nil
}
