package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/manifests/probe"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// The memory saves requests and never changes an outcome: two owners, one synced by an engine
// with a memory and one by a stateless engine, go through the same random history (revisions,
// drift and deletions of their live objects, live objects replaced by foreign ones, foreign
// objects adopted or refused, another owner adopting one of theirs, gates opened and closed,
// the hosted cluster replaced, gone and back), and every pass of both ends with the same
// result, the same live objects and the same inventory. Only the requests differ; the test
// prints both counts.
func TestTheMemoryChangesNoOutcome(t *testing.T) {
	env.Require(t)
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runDifferential(t, seed, 10) })
	}
}

// FuzzTheMemoryChangesNoOutcome runs the differential test on histories the fuzzer picks; the
// seed corpus runs with every go test.
func FuzzTheMemoryChangesNoOutcome(f *testing.F) {
	f.Add(uint64(100), uint8(6))
	f.Add(uint64(101), uint8(12))
	f.Fuzz(func(t *testing.T, seed uint64, steps uint8) {
		env.Require(t)
		runDifferential(t, seed, int(steps%16)+1)
	})
}

// green is a second hosted cluster, which replaces blue behind the owners' namespaces: its
// objects have other UIDs, and its resourceVersions are its own.
var (
	green     *fleet.HostedCluster
	greenErr  error
	greenOnce sync.Once
)

func greenCluster(t *testing.T) *fleet.HostedCluster {
	t.Helper()
	greenOnce.Do(func() {
		green, greenErr = env.AddHostedCluster(context.Background(), fleet.HostedClusterInput{Name: "green"})
	})
	NewWithT(t).Expect(greenErr).NotTo(HaveOccurred())
	return green
}

// world is one owner of the differential test, with its engine and what it needs to play the
// same history as the other.
type world struct {
	name     string
	engine   *Engine
	target   *Target
	hostedNS string
	events   *manualEvents
	counters []*requestCounter
	previous []convoyv1alpha1.InventoryEntry
	clients  map[string]client.Client // the hosted clients of this world, by cluster name
}

func runDifferential(t *testing.T, seed uint64, steps int) {
	g := NewWithT(t)
	worlds := []*world{newWorld(t, "memory", true), newWorld(t, "stateless", false)}
	h := &history{rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), probes: gateRules(t)}
	for step := range steps {
		action := h.next(g, worlds)
		syncWorlds(t, g, h, worlds, fmt.Sprintf("seed %d, step %d (%s)", seed, step, action))
	}
	for _, w := range worlds {
		t.Logf("seed %d, %d steps: %s engine sent %d requests %v", seed, steps, w.name, w.requests(), w.byVerb())
	}
}

// syncWorlds syncs each world with the current revision and fails when the outcomes differ.
func syncWorlds(t *testing.T, g Gomega, h *history, worlds []*world, what string) {
	t.Helper()
	quiet := ctrl.LoggerInto(context.Background(), logr.Discard())
	var outcomes []string
	for _, w := range worlds {
		res, err := w.engine.Sync(quiet, w.target, h.revision(w), w.previous)
		w.previous = res.Inventory
		outcomes = append(outcomes, w.summary(res, err)+w.objects(g))
	}
	if outcomes[0] != outcomes[1] {
		t.Fatalf("%s: the outcomes differ\n--- with the memory:\n%s\n--- stateless:\n%s", what, outcomes[0], outcomes[1])
	}
}

// A live object replaced by a foreign one between two passes, while the revision changes it:
// the memory must neither apply it nor another changed object of its stage before the
// replacement is found, and must name it in the refusal as a stateless pass does.
func TestAReplacedObjectChangesNoOutcome(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	worlds := []*world{newWorld(t, "memory", true), newWorld(t, "stateless", false)}
	h := &history{probes: gateRules(t)}
	revision := func(id string, names ...string) string {
		h.spec = revisionSpec{id: id, digested: true}
		for _, name := range names {
			h.spec.management = append(h.spec.management, objectSpec{name: name, value: id})
		}
		return "revision " + id
	}
	replace := func(c client.Client, obj *unstructured.Unstructured) error { return replaceWithForeign(c, obj) }
	for i, step := range []func() string{
		func() string { return revision("r1", "a", "b") },
		func() string { return h.onObject(g, worlds, "replace", "a", false, replace) },
		func() string { return revision("r2", "a", "b") },
		func() string { return h.foreignNamed(g, worlds, "c") },
		func() string { return revision("r3", "a", "b", "c") },
	} {
		syncWorlds(t, g, h, worlds, fmt.Sprintf("step %d (%s)", i, step()))
	}
}

func newWorld(t *testing.T, name string, withMemory bool) *world {
	ns := fleet.NewNamespaceIn(t, env.Client)
	mgmt, counter := countingClient(t, env.Config)
	w := &world{name: name, hostedNS: "h-" + ns, events: &manualEvents{counts: map[string]uint64{}},
		target: &Target{Namespace: ns, Name: "app", Management: mgmt}, counters: []*requestCounter{counter},
		clients: map[string]client.Client{}}
	for cluster, hc := range map[string]*fleet.HostedCluster{"blue": blue, "green": greenCluster(t)} {
		c, counter := countingClient(t, hc.Config)
		w.clients[cluster], w.counters = c, append(w.counters, counter)
	}
	w.target.Hosted = w.clients["blue"]
	versions := &liveVersions{}
	if withMemory {
		w.engine = memoryEngine(Options{Controller: "differential"}, versions, w.events)
	} else {
		w.engine = NewEngine(Options{Controller: "differential", Watch: versions})
	}
	return w
}

// history draws the random history both worlds go through, one action per step.
type history struct {
	rng    *rand.Rand
	probes []probe.Rule
	spec   revisionSpec
	n      int
}

// revisionSpec is a revision as both worlds get it, namespaces aside.
type revisionSpec struct {
	id                 string
	management, hosted []objectSpec
	hostedFirst        bool
	digested           bool
}

// objectSpec is one ConfigMap of a revision.
type objectSpec struct {
	name, value string
	gate, adopt bool
}

var names = []string{"a", "b", "c", "d", "e"}

// next draws the next action and plays it in both worlds, save a new revision, which the pass
// that follows applies.
func (h *history) next(g Gomega, worlds []*world) string {
	h.n++
	if h.spec.id == "" {
		h.spec = h.randomRevision()
		return "first revision"
	}
	switch h.rng.IntN(9) {
	case 0, 1:
		h.spec = h.randomRevision()
		return "revision " + h.spec.id
	case 2:
		return h.onLive(g, worlds, "drift", func(c client.Client, obj *unstructured.Unstructured) error {
			patch := fmt.Sprintf(`{"data":{"v":"drift-%d"}}`, h.n)
			return c.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", []byte(patch)))
		})
	case 3:
		return h.onLive(g, worlds, "delete", func(c client.Client, obj *unstructured.Unstructured) error {
			return c.Delete(context.Background(), obj)
		})
	case 4:
		return h.foreign(g, worlds)
	case 5:
		return h.otherOwnerAdopts(g, worlds)
	case 7:
		return h.onLive(g, worlds, "replace", func(c client.Client, obj *unstructured.Unstructured) error {
			return replaceWithForeign(c, obj)
		})
	case 6:
		return h.onLive(g, worlds, "gate", func(c client.Client, obj *unstructured.Unstructured) error {
			if obj.GetAnnotations()[kubetest.ReadyAnnotation] != "" {
				obj.SetAnnotations(nil)
			} else {
				obj.SetAnnotations(map[string]string{kubetest.ReadyAnnotation: "true"})
			}
			return c.Update(context.Background(), obj)
		})
	}
	return h.moveHosted(worlds)
}

// replaceWithForeign deletes obj and creates in its place, in one step, an object of the same
// name that no owner's labels name: someone else's.
func replaceWithForeign(c client.Client, obj *unstructured.Unstructured) error {
	ctx := context.Background()
	if err := c.Delete(ctx, obj); err != nil {
		return err
	}
	return c.Create(ctx, kubetest.ConfigMap(obj.GetNamespace(), obj.GetName(), map[string]string{"v": "replaced"}))
}

func (h *history) randomRevision() revisionSpec {
	spec := revisionSpec{id: fmt.Sprintf("r%d", h.n), hostedFirst: h.rng.IntN(4) == 0, digested: h.rng.IntN(2) == 0}
	for _, name := range names {
		if h.rng.IntN(3) > 0 {
			spec.management = append(spec.management, objectSpec{name: name, value: fmt.Sprint(h.rng.IntN(3)),
				gate: h.rng.IntN(5) == 0, adopt: h.rng.IntN(3) == 0})
		}
		if h.rng.IntN(3) == 0 {
			spec.hosted = append(spec.hosted, objectSpec{name: name, value: fmt.Sprint(h.rng.IntN(3)), gate: h.rng.IntN(5) == 0})
		}
	}
	return spec
}

// onLive plays f on one live ConfigMap of each world, the same one, chosen at random among
// the management and hosted objects of the current revision.
func (h *history) onLive(g Gomega, worlds []*world, what string, f func(client.Client, *unstructured.Unstructured) error) string {
	all := append(append([]objectSpec{}, h.spec.management...), h.spec.hosted...)
	if len(all) == 0 {
		return what + ": nothing"
	}
	i := h.rng.IntN(len(all))
	return h.onObject(g, worlds, what, all[i].name, i >= len(h.spec.management), f)
}

// onObject plays f on live ConfigMap name of each world, management or hosted.
func (h *history) onObject(g Gomega, worlds []*world, what, name string, hosted bool, f func(client.Client, *unstructured.Unstructured) error) string {
	for _, w := range worlds {
		c, ns := env.Client, w.target.Namespace
		if hosted {
			if c = w.target.Hosted; c == nil {
				return what + ": hosted cluster gone"
			}
			ns = w.hostedNS
		}
		live := &unstructured.Unstructured{}
		live.SetAPIVersion("v1")
		live.SetKind("ConfigMap")
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, live); err != nil {
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
			continue
		}
		g.Expect(f(c, live)).To(Succeed())
		w.events.deliver(w.target)
	}
	return fmt.Sprintf("%s %s (hosted: %t)", what, name, hosted)
}

// foreign creates, in each world's namespace, a ConfigMap no owner's labels name, unless the
// name is taken; a revision that holds it adopts it or is refused.
func (h *history) foreign(g Gomega, worlds []*world) string {
	return h.foreignNamed(g, worlds, names[h.rng.IntN(len(names))])
}

// foreignNamed creates foreign ConfigMap name in each world's namespace, unless it is taken.
func (h *history) foreignNamed(g Gomega, worlds []*world, name string) string {
	for _, w := range worlds {
		err := env.Client.Create(context.Background(), kubetest.ConfigMap(w.target.Namespace, name, map[string]string{"v": "foreign"}))
		g.Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
		w.events.deliver(w.target)
	}
	return "foreign " + name
}

// otherOwnerAdopts has another owner of each world's namespace adopt one of the names, with
// the world's engine.
func (h *history) otherOwnerAdopts(g Gomega, worlds []*world) string {
	name := names[h.rng.IntN(len(names))]
	obj := kubetest.ConfigMap("", name, map[string]string{"v": fmt.Sprintf("other-%d", h.n)})
	obj.SetAnnotations(map[string]string{convoyv1alpha1.AdoptAnnotation: "true"})
	rev := &Revision{ID: "other", Phases: []Phase{{Name: "other", Class: convoyv1alpha1.ClassManagement, Objects: []*unstructured.Unstructured{obj}}}}
	var outcomes []string
	for _, w := range worlds {
		other := &Target{Namespace: w.target.Namespace, Name: "other", Management: w.target.Management}
		res, err := w.engine.Sync(ctrl.LoggerInto(context.Background(), logr.Discard()), other, rev, nil)
		outcomes = append(outcomes, w.summary(res, err))
		w.events.deliver(w.target)
	}
	g.Expect(outcomes[0]).To(Equal(outcomes[1]), "another owner adopts %s", name)
	return "another owner adopts " + name
}

// moveHosted replaces the hosted cluster behind both worlds' namespaces with another, or
// takes it away.
func (h *history) moveHosted(worlds []*world) string {
	choice := []string{"blue", "green", ""}[h.rng.IntN(3)]
	for _, w := range worlds {
		w.target.Hosted, w.target.HostedUnavailable = nil, nil
		if choice == "" {
			w.target.HostedUnavailable = pass.Waitf(convoyv1alpha1.HostedClusterUnreachableReason, UnreachableInterval,
				"the hosted cluster of namespace %s cannot be reached", w.target.Namespace)
			continue
		}
		w.target.Hosted = w.clients[choice]
	}
	return "hosted cluster: " + choice
}

// revision builds the current revision for w.
func (h *history) revision(w *world) *Revision {
	rev := &Revision{ID: h.spec.id, Probes: h.probes}
	mgmt := Phase{Name: "management", Class: convoyv1alpha1.ClassManagement}
	for _, o := range h.spec.management {
		mgmt.Objects = append(mgmt.Objects, o.object(""))
	}
	hosted := Phase{Name: "hosted", Class: convoyv1alpha1.ClassHostedCluster}
	if len(h.spec.hosted) > 0 {
		hosted.Objects = append(hosted.Objects, kubetest.Object("v1", "Namespace", "", w.hostedNS, nil))
	}
	for _, o := range h.spec.hosted {
		hosted.Objects = append(hosted.Objects, o.object(w.hostedNS))
	}
	rev.Phases = []Phase{mgmt, hosted}
	if h.spec.hostedFirst {
		rev.Phases = []Phase{hosted, mgmt}
	}
	if h.spec.digested {
		for i := range rev.Phases {
			ph := &rev.Phases[i]
			for _, obj := range ph.Objects {
				d, _ := manifests.ObjectDigest(obj)
				ph.Digests = append(ph.Digests, d)
			}
		}
	}
	return rev
}

func (o objectSpec) object(namespace string) *unstructured.Unstructured {
	obj := kubetest.ConfigMap(namespace, o.name, map[string]string{"v": o.value})
	if o.gate {
		obj.SetLabels(kubetest.Gate("", "").GetLabels())
	}
	if o.adopt {
		obj.SetAnnotations(map[string]string{convoyv1alpha1.AdoptAnnotation: "true"})
	}
	return obj
}

// summary is a pass's outcome, request counts and the memory's hint aside (Result.Stale), in
// terms that hold for either world.
func (w *world) summary(res *Result, err error) string {
	var b strings.Builder
	switch {
	case err == nil:
		b.WriteString("ok")
	case isWaiting(err):
		fmt.Fprintf(&b, "waiting %s: %v", reasonOf(err), err)
	case isStalling(err):
		fmt.Fprintf(&b, "stalling %s: %v", reasonOf(err), err)
	default:
		fmt.Fprintf(&b, "error: %v", err)
	}
	fmt.Fprintf(&b, "\navailable %t, watched %t, %s, pruned %d\n", res.Available, res.Watched, res.Changes, res.Pruned)
	for _, ph := range res.Phases {
		fmt.Fprintf(&b, "phase %s/%s: %d objects, available %t: %s\n", ph.Name, ph.Class, ph.Objects, ph.Available, ph.Message)
	}
	for _, e := range res.Inventory {
		fmt.Fprintf(&b, "inventory %s %s %s %s\n", e.Cluster, e.Phase, e.ID, e.Version)
	}
	for _, l := range res.Left {
		fmt.Fprintf(&b, "left %s\n", l)
	}
	return w.normalize(b.String())
}

// objects lists the live ConfigMaps of w, in both hosted clusters too, with their data, labels
// and annotations.
func (w *world) objects(g Gomega) string {
	var lines []string
	list := func(cluster string, c client.Client, namespace string) {
		cms := &unstructured.UnstructuredList{}
		cms.SetAPIVersion("v1")
		cms.SetKind("ConfigMapList")
		g.Expect(c.List(context.Background(), cms, client.InNamespace(namespace))).To(Succeed())
		for _, cm := range cms.Items {
			if cm.GetName() == "kube-root-ca.crt" {
				continue
			}
			lines = append(lines, fmt.Sprintf("%s %s %v %v %v", cluster, cm.GetName(), cm.Object["data"], cm.GetLabels(), cm.GetAnnotations()))
		}
	}
	list("management", env.Client, w.target.Namespace)
	list("blue", blue.Client, w.hostedNS)
	list("green", green.Client, w.hostedNS)
	sort.Strings(lines)
	return w.normalize(strings.Join(lines, "\n"))
}

// normalize names the world's namespaces alike.
func (w *world) normalize(s string) string {
	return strings.NewReplacer(w.hostedNS, "$HOSTED", w.target.Namespace, "$NS").Replace(s)
}

// requests counts the requests w's engine sent, discovery aside.
func (w *world) requests() int {
	n := 0
	for _, v := range w.byVerb() {
		n += v
	}
	return n
}

func (w *world) byVerb() map[string]int {
	out := map[string]int{}
	for _, c := range w.counters {
		c.mu.Lock()
		for verb, n := range c.counts {
			if verb != "DISCOVERY" {
				out[verb] += n
			}
		}
		c.mu.Unlock()
	}
	return out
}
