package bench

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// fleetPrefix is the folder of the fleet scenario's packages in the benchmark repository.
const fleetPrefix = "fleet"

// hostedSampleLabel marks the HostedClusters of the fleet that have a hosted API server; the
// add-ons with hosted-cluster phases select them.
const hostedSampleLabel = "bench.convoy.dev/hosted"

// fleetAddon is one add-on of the fleet scenario: a package of objectsPerPackage objects, in
// management phases or, when hosted, in hosted-cluster phases.
type fleetAddon struct {
	// index numbers the add-on from 0.
	index int
	// hosted puts its objects in the hosted clusters of the sample.
	hosted bool
	// rev is the revision of its files last committed.
	rev int
	// dependsOn names the add-on it depends on (spec.dependsOn), if any.
	dependsOn string
}

// fleetChainDepth is the length of the dependency chain among the fleet's add-ons: add-on 2
// depends on add-on 1, add-on 3 on add-on 2, and so on, as far as the management add-ons go
// (add-on 0, the one rolled alone, stays out of it).
const fleetChainDepth = 3

// name is the add-on's name: its HostedClusterPackage, its Packages and its folder.
func (a *fleetAddon) name() string { return fmt.Sprintf("addon-%02d", a.index) }

// path is the add-on's folder in the repository.
func (a *fleetAddon) path() string { return fleetPrefix + "/" + a.name() }

// prefix starts the names of the add-on's management objects, so that add-ons do not collide.
func (a *fleetAddon) prefix() string { return fmt.Sprintf("a%02d-", a.index) }

// objects returns the add-on's objects at rev: management objects (names prefixed, namespace
// left to the Package) or, when hosted, a Namespace and nine ConfigMaps in the hosted cluster.
func (a *fleetAddon) objects(rev int) []*unstructured.Unstructured {
	if !a.hosted {
		return managementObjects("", a.prefix(), rev)
	}
	ns := "fleet-" + a.name()
	objs := []*unstructured.Unstructured{obj("v1", "Namespace", "", ns, "namespace", rev, nil)}
	for i := 1; i < objectsPerPackage; i++ {
		objs = append(objs, obj("v1", "ConfigMap", ns, fmt.Sprintf("config-%d", i), "config", rev,
			map[string]any{"data": map[string]any{"revision": fmt.Sprint(rev)}}))
	}
	return objs
}

// manifest returns the add-on's PackageManifest.
func (a *fleetAddon) manifest() string {
	m := managementManifest
	if a.hosted {
		m = hostedManifest
	}
	return strings.Replace(m, "metadata: {name: "+map[bool]string{false: "fleet-addon", true: "hosted-addon"}[a.hosted]+"}",
		"metadata: {name: "+a.name()+"}", 1)
}

// files returns the add-on's files at its current revision.
func (a *fleetAddon) files() (map[string]string, error) {
	var b strings.Builder
	for _, o := range a.objects(a.rev) {
		raw, err := json.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "---\n%s\n", raw)
	}
	return map[string]string{a.path() + "/manifest.yaml": a.manifest(), a.path() + "/objects.yaml": b.String()}, nil
}

// newFleetAddons returns n add-ons before their first revision (bump makes it 1), the last
// hosted of them with hosted-cluster phases, the management ones from add-on 1 on in a
// dependency chain of up to fleetChainDepth levels.
func newFleetAddons(n, hosted int) []*fleetAddon {
	out := make([]*fleetAddon, n)
	for i := range out {
		// The hosted add-ons are the last ones: add-on 0 is the one rolled alone.
		out[i] = &fleetAddon{index: i, hosted: i >= n-hosted}
	}
	for i := 2; i <= 1+fleetChainDepth && i < n && !out[i].hosted; i++ {
		out[i].dependsOn = out[i-1].name()
	}
	return out
}

// bump moves each add-on to its next revision and returns their files together.
func bump(addons ...*fleetAddon) (map[string]string, error) {
	all := map[string]string{}
	for _, a := range addons {
		a.rev++
		files, err := a.files()
		if err != nil {
			return nil, err
		}
		for k, v := range files {
			all[k] = v
		}
	}
	return all, nil
}
