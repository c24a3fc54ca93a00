package rolloutcontroller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// deleted is the expected generation of a Package the controller deleted.
const deleted = -1

// expectationTimeout drops expectations the cache never meets (a Package deleted by someone
// else right after an update).
const expectationTimeout = 30 * time.Second

// expectations remember, per HostedClusterPackage, the Packages the last pass wrote and the
// generation each must have in the cache (or deleted) before the next pass may plan.
//
// Note: planning on a cache that has not seen the last pass's writes would count an updating
// Package as still ready and spend its budget slot twice; the Package watch requeues the
// HostedClusterPackage once the cache catches up.
type expectations struct {
	mu sync.Mutex
	m  map[string]map[types.NamespacedName]int64
	at map[string]time.Time
}

// newExpectations returns empty expectations.
func newExpectations() *expectations {
	return &expectations{m: map[string]map[types.NamespacedName]int64{}, at: map[string]time.Time{}}
}

// set adds what the cache must show for the Packages of hcpkg.
func (e *expectations) set(hcpkg string, packages map[types.NamespacedName]int64) {
	if len(packages) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m[hcpkg] == nil {
		e.m[hcpkg] = map[types.NamespacedName]int64{}
	}
	e.at[hcpkg] = time.Now()
	for k, v := range packages {
		e.m[hcpkg][k] = v
	}
}

// forget drops the expectations of a deleted HostedClusterPackage.
func (e *expectations) forget(hcpkg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, hcpkg)
	delete(e.at, hcpkg)
}

// satisfied removes the expectations of hcpkg that cached (the Packages it owns, as the cache
// shows them) meets, and reports whether none is left.
func (e *expectations) satisfied(hcpkg string, cached map[types.NamespacedName]*convoyv1alpha1.Package) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if time.Since(e.at[hcpkg]) > expectationTimeout {
		delete(e.m, hcpkg)
	}
	for key, generation := range e.m[hcpkg] {
		pkg := cached[key]
		met := pkg != nil && pkg.Generation >= generation
		if generation == deleted {
			met = pkg == nil || pkg.DeletionTimestamp != nil
		}
		if met {
			delete(e.m[hcpkg], key)
		}
	}
	if len(e.m[hcpkg]) == 0 {
		delete(e.m, hcpkg)
		delete(e.at, hcpkg)
		return true
	}
	return false
}
