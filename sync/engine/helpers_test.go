package engine

import (
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests/probe"
	"github.com/convoy-gitops/convoy/sync/engine/memory"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// statelessTests, set by CONVOY_TEST_ENGINE_MEMORY=off, runs the tests that do not measure
// what the memory saves with stateless engines (testEngine): their assertions must hold
// either way, as the memory never changes an outcome.
var statelessTests = os.Getenv("CONVOY_TEST_ENGINE_MEMORY") == "off"

// testEngine returns an engine of opts with a memory of its own, or none when statelessTests.
func testEngine(opts Options) *Engine {
	if !statelessTests {
		opts.Memory = memory.New(memory.Options{Controller: opts.Controller})
	}
	return NewEngine(opts)
}

// memoryEngine returns an engine of opts with a memory of its own, told by versions (the watch
// of the management cluster, which also tells the engine which kinds are watched) and events
// when they are set: for the tests that measure what the memory saves.
func memoryEngine(opts Options, versions memory.ResourceVersions, events memory.OwnerEvents) *Engine {
	if versions != nil {
		opts.Watch = versions
	}
	opts.Memory = memory.New(memory.Options{Controller: opts.Controller, Concurrency: DefaultConcurrency,
		Versions: versions, Events: events})
	return NewEngine(opts)
}

// gateRules compiles gateProbe.
func gateRules(t *testing.T) []probe.Rule {
	t.Helper()
	rules, errs := probe.Compile([]convoyv1alpha1.ObjectSetProbe{kubetest.GateProbe()}, field.NewPath("probes"))
	NewWithT(t).Expect(errs).To(BeEmpty())
	return rules
}

// crd builds a namespaced CustomResourceDefinition of kind in group, accepting any fields.
func crd(group, kind string) *unstructured.Unstructured {
	plural := strings.ToLower(kind) + "s"
	return kubetest.Object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", plural+"."+group, map[string]any{
		"spec": map[string]any{
			"group": group,
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	})
}

// requestCounter counts the requests a client sends, by verb; dry-run requests and lists
// (LIST) apart. While failLists is set, lists fail with an internal error.
type requestCounter struct {
	mu        sync.Mutex
	counts    map[string]int
	failLists bool
}

// countingClient returns a client of cfg whose requests are counted.
func countingClient(t *testing.T, cfg *rest.Config) (client.Client, *requestCounter) {
	t.Helper()
	rc := &requestCounter{counts: map[string]int{}}
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if rc.add(req) == "LIST" && rc.failingLists() {
				return &http.Response{StatusCode: http.StatusInternalServerError, Status: "500 Internal Server Error",
					Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
			}
			return rt.RoundTrip(req)
		})
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c, rc
}

// add counts req and returns what it was counted as.
func (rc *requestCounter) add(req *http.Request) string {
	segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if (segs[0] == "api" && len(segs) <= 2) || (segs[0] == "apis" && len(segs) <= 3) || segs[0] == "openapi" {
		rc.inc("DISCOVERY")
		return "DISCOVERY"
	}
	verb := req.Method
	if req.URL.Query().Get("dryRun") != "" {
		verb += "(dry-run)"
	}
	if verb == http.MethodGet && namesCollection(segs) {
		verb = "LIST"
	}
	rc.inc(verb)
	return verb
}

// namesCollection reports a path, split at its slashes, that names a collection rather than one
// object: after the group and version, "<resource>" or "namespaces/<namespace>/<resource>".
// (A subresource's path would pass for one; the tests read none.)
func namesCollection(segs []string) bool {
	rest := segs[3:] // apis/<group>/<version>/...
	if segs[0] == "api" {
		rest = segs[2:] // api/v1/...
	}
	return len(rest)%2 == 1
}

// setFailLists makes lists fail, or not.
func (rc *requestCounter) setFailLists(fail bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.failLists = fail
}

func (rc *requestCounter) failingLists() bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.failLists
}

func (rc *requestCounter) inc(k string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.counts[k]++
}

// take returns the counts since the last take and resets them.
func (rc *requestCounter) take() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := rc.counts
	rc.counts = map[string]int{}
	return out
}

// takeWithoutDiscovery is take without the discovery requests, which depend on what the
// client asked before.
func (rc *requestCounter) takeWithoutDiscovery() map[string]int {
	counts := rc.take()
	delete(counts, "DISCOVERY")
	return counts
}

// writes counts the requests that may change an object.
func writes(counts map[string]int) int {
	return counts["PATCH"] + counts["PUT"] + counts["POST"] + counts["DELETE"]
}

// total counts every request.
func total(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func objectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}
