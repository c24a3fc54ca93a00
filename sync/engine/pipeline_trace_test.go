package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sync/engine/memory"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// The trace of the pipeline: which files of the package a pass enters, from Engine.Sync, and
// how often. The test builds the package's tests again with every function of its non-test
// files beginning with a call to enterFunc (`go test -overlay`: the files on disk are not
// changed), runs itself in that build against the test control plane, and reads back the
// trace of a few passes: an install, a change that prunes, a drift, a pass with nothing to do,
// and an install without a memory.
//
// A trace is the calling context tree of the pass: each chain of calls once, in the order it
// was first made. A loop over objects, stages or phases that makes the same calls again adds
// nothing to it; a helper called from two places is two calls. A file is entered by a call
// into it from a function of another file; a call whose own calls all stay in the file it
// enters (a helper of that file: a key, a label, a live state the observer holds) is read
// where it is made. Walking the tree, into each call and back out of it, gives the stays: the
// runs spent in one file. The memory (Options.Memory, here wrapped by tracedMemory) counts as
// one file, every call to it an entry. No file of the package may be entered more than twice,
// and the memory no more than five times.
//
// To print the tables: go test ./sync/engine -run TestAPassEntersEachFileAtMostTwice -v.

// traceEnv names the file the instrumented build writes its traces to.
const traceEnv = "CONVOY_TEST_ENGINE_TRACE"

// memoryFile is the memory's name in a trace.
const memoryFile = "(memory)"

// maxEntries is how often a pass may enter one file of the pipeline.
const maxEntries = 2

// maxMemoryVisits is how often a traced pass may visit the memory: its four points (doc.go),
// and the prune's deletes.
const maxMemoryVisits = 5

// passTrace is the trace of one pass.
type passTrace struct {
	// Name says which pass it is.
	Name string
	// Nodes is the calling context tree; Nodes[0], the root, is the test.
	Nodes []traceNode
	// MemoryVisits counts the calls to the memory, every one (not once per chain).
	MemoryVisits int
}

// traceNode is one chain of calls: the function that ends it, and the chains it made next.
type traceNode struct {
	File, Func string
	Children   []int
}

// stay is one run spent in a file.
type stay struct{ File, Func string }

func TestAPassEntersEachFileAtMostTwice(t *testing.T) {
	env.Require(t)
	if out := os.Getenv(traceEnv); out != "" {
		traces := tracePasses(t)
		data, err := json.Marshal(traces)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(os.WriteFile(out, data, 0o600)).To(Succeed())
		return
	}
	traces := runInstrumented(t)
	t.Log("\n" + entriesTable(traces))
	for _, tr := range traces {
		t.Run(tr.Name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(len(tr.Nodes)).To(BeNumerically(">", 10), "the build was instrumented")
			stays, entered := tr.walk()
			t.Logf("stays: %s", stayList(stays))
			for file, n := range entered {
				if file != memoryFile {
					g.Expect(n).To(BeNumerically("<=", maxEntries), "%s entered %d times", file, n)
				}
			}
			g.Expect(entered[memoryFile]).To(BeNumerically("<=", maxMemoryVisits), "the memory visited %d times", entered[memoryFile])
		})
	}
}

// runInstrumented runs this test in the instrumented build and returns the traces it wrote.
func runInstrumented(t *testing.T) []passTrace {
	g := NewWithT(t)
	overlay := instrument(t)
	out := filepath.Join(t.TempDir(), "traces.json")
	goBin, err := exec.LookPath("go")
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(goBin, "test", "-overlay="+overlay, "-count=1",
		"-run=^TestAPassEntersEachFileAtMostTwice$", ".")
	cmd.Env = append(os.Environ(), traceEnv+"="+out)
	output, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "the instrumented build:\n%s", output)
	data, err := os.ReadFile(out)
	g.Expect(err).NotTo(HaveOccurred(), "the instrumented build wrote no trace:\n%s", output)
	var traces []passTrace
	g.Expect(json.Unmarshal(data, &traces)).To(Succeed())
	g.Expect(traces).NotTo(BeEmpty())
	return traces
}

// instrument writes a copy of each non-test file of the package whose functions begin with a
// call to enterFunc, and the overlay that builds them in place of the originals.
func instrument(t *testing.T) string {
	g := NewWithT(t)
	dir := t.TempDir()
	files, err := filepath.Glob("*.go")
	g.Expect(err).NotTo(HaveOccurred())
	replace := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		g.Expect(err).NotTo(HaveOccurred())
		instrumented, err := instrumentFile(name, src)
		g.Expect(err).NotTo(HaveOccurred())
		abs, err := filepath.Abs(name)
		g.Expect(err).NotTo(HaveOccurred())
		replace[abs] = filepath.Join(dir, name)
		g.Expect(os.WriteFile(replace[abs], instrumented, 0o600)).To(Succeed())
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "overlay.json")
	g.Expect(os.WriteFile(path, overlay, 0o600)).To(Succeed())
	return path
}

// instrumentFile returns src with `defer enterFunc(file, function)()` at the start of every
// function body. Nothing else moves: the statement goes on the line of the opening brace.
func instrumentFile(name string, src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	type insertion struct {
		at   int
		text string
	}
	var inserts []insertion
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			inserts = append(inserts, insertion{at: fset.Position(fd.Body.Lbrace).Offset + 1,
				text: fmt.Sprintf("defer enterFunc(%q, %q)();", name, funcName(fd))})
		}
	}
	out := slices.Clone(src)
	for i := len(inserts) - 1; i >= 0; i-- {
		out = slices.Insert(out, inserts[i].at, []byte(inserts[i].text)...)
	}
	return out, nil
}

// funcName names a function declaration: "Sync", "(*Engine).Sync".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	recv := fd.Recv.List[0].Type
	star := ""
	if s, ok := recv.(*ast.StarExpr); ok {
		recv, star = s.X, "*"
	}
	if ix, ok := recv.(*ast.IndexExpr); ok {
		recv = ix.X
	}
	name := "?"
	if id, ok := recv.(*ast.Ident); ok {
		name = id.Name
	}
	return fmt.Sprintf("(%s%s).%s", star, name, fd.Name.Name)
}

// pipelineTrace records the calls of the instrumented build while a pass is traced.
var pipelineTrace = &callTrace{}

// enterFunc is what every function of the instrumented build calls first; it returns what
// its deferred call runs when the function returns.
func enterFunc(file, function string) func() { return pipelineTrace.enter(file, function) }

// callTrace builds the calling context tree of one pass. The engine of a traced pass has a
// concurrency of 1, so that its calls nest on one stack.
type callTrace struct {
	mu     sync.Mutex
	on     bool
	nodes  []traceNode // nodes[0] is the root: the test
	stack  []int
	memory int
}

func (c *callTrace) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on, c.nodes, c.stack, c.memory = true, []traceNode{{}}, []int{0}, 0
}

func (c *callTrace) enter(file, function string) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on {
		return func() {}
	}
	if file == memoryFile {
		c.memory++
	}
	parent := c.stack[len(c.stack)-1]
	node := -1
	for _, child := range c.nodes[parent].Children {
		if n := c.nodes[child]; n.File == file && n.Func == function {
			node = child
		}
	}
	if node < 0 {
		node = len(c.nodes)
		c.nodes = append(c.nodes, traceNode{File: file, Func: function})
		c.nodes[parent].Children = append(c.nodes[parent].Children, node)
	}
	c.stack = append(c.stack, node)
	depth := len(c.stack)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.on && len(c.stack) >= depth {
			c.stack = c.stack[:depth-1]
		}
	}
}

// stop ends the trace and returns it.
func (c *callTrace) stop(name string) passTrace {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	return passTrace{Name: name, Nodes: c.nodes, MemoryVisits: c.memory}
}

// walk walks the tree, into each call and back out of it. It returns the runs spent in one
// file (the stays) and how often each file was entered: called into from a function of
// another file. A call whose own calls all stay in the file it enters (a helper of that file:
// an accessor, a key, a digest) is read where it is made: neither a stay nor an entry. A call
// to the memory always is both.
func (tr passTrace) walk() (stays []stay, entered map[string]int) {
	entered = map[string]int{}
	files := make([]map[string]bool, len(tr.Nodes))
	var filesOf func(n int) map[string]bool
	filesOf = func(n int) map[string]bool {
		if files[n] == nil {
			files[n] = map[string]bool{tr.Nodes[n].File: true}
			for _, child := range tr.Nodes[n].Children {
				maps.Copy(files[n], filesOf(child))
			}
		}
		return files[n]
	}
	var visit func(n int, from string)
	visit = func(n int, from string) {
		node := tr.Nodes[n]
		if node.File != from {
			if node.File != memoryFile && len(filesOf(n)) == 1 {
				return
			}
			entered[node.File]++
		}
		stays = appendStay(stays, stay{File: node.File, Func: node.Func})
		for _, child := range node.Children {
			visit(child, node.File)
			stays = appendStay(stays, stay{File: node.File, Func: node.Func})
		}
	}
	for _, child := range tr.Nodes[0].Children {
		visit(child, "")
	}
	return stays, entered
}

// appendStay adds s unless it is in the file of the last stay.
func appendStay(stays []stay, s stay) []stay {
	if n := len(stays); n > 0 && stays[n-1].File == s.File {
		return stays
	}
	return append(stays, s)
}

// entriesTable prints how often each pass entered each file, a file a row, and its stays.
func entriesTable(traces []passTrace) string {
	entered := make([]map[string]int, len(traces))
	stays := make([]int, len(traces))
	files := map[string]bool{}
	var b strings.Builder
	b.WriteString("| File |")
	for i, tr := range traces {
		var s []stay
		s, entered[i] = tr.walk()
		stays[i] = len(s)
		for f := range entered[i] {
			files[f] = true
		}
		fmt.Fprintf(&b, " %s |", tr.Name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(traces)) + "\n")
	names := slices.Sorted(maps.Keys(files))
	sort.SliceStable(names, func(i, j int) bool { return names[i] != memoryFile && names[j] == memoryFile })
	for _, f := range names {
		fmt.Fprintf(&b, "| %s |", f)
		for i := range traces {
			fmt.Fprintf(&b, " %d |", entered[i][f])
		}
		b.WriteString("\n")
	}
	b.WriteString("| stays |")
	for i := range traces {
		fmt.Fprintf(&b, " %d |", stays[i])
	}
	b.WriteString("\n| memory visits |")
	for _, tr := range traces {
		fmt.Fprintf(&b, " %d |", tr.MemoryVisits)
	}
	return b.String()
}

// stayList prints stays as "sync.go (*Engine).Sync → …".
func stayList(stays []stay) string {
	parts := make([]string, len(stays))
	for i, s := range stays {
		parts[i] = s.File + " " + s.Func
	}
	return strings.Join(parts, " → ")
}

// tracedMemory is a memory whose calls are traced as one file's.
type tracedMemory struct{ Memory }

func (m tracedMemory) Repeat(p memory.Pass) (*memory.Mark, *memory.Settled) {
	defer enterFunc(memoryFile, "Repeat")()
	return m.Memory.Repeat(p)
}

func (m tracedMemory) Ask(ctx context.Context, c memory.Cluster, stage []memory.Desired) []memory.Advice {
	defer enterFunc(memoryFile, "Ask")()
	return m.Memory.Ask(ctx, c, stage)
}

func (m tracedMemory) Applying(c memory.Cluster, stage []memory.Desired) {
	defer enterFunc(memoryFile, "Applying")()
	m.Memory.Applying(c, stage)
}

func (m tracedMemory) Applied(c memory.Cluster, writes []memory.Write) {
	defer enterFunc(memoryFile, "Applied")()
	m.Memory.Applied(c, writes)
}

func (m tracedMemory) Settle(mark *memory.Mark, o memory.Outcome) bool {
	defer enterFunc(memoryFile, "Settle")()
	return m.Memory.Settle(mark, o)
}

// tracePasses traces the passes of one owner through a few revisions, and an install without a
// memory.
func tracePasses(t *testing.T) []passTrace {
	g := NewWithT(t)
	ctx := context.Background()
	versions, events := &liveVersions{}, &manualEvents{counts: map[string]uint64{}}
	store := memory.New(memory.Options{Controller: "trace", Concurrency: 1, Versions: versions, Events: events})
	e := NewEngine(Options{Controller: "trace", Concurrency: 1, Watch: versions, Memory: tracedMemory{store}})
	tgt := &Target{Namespace: fleet.NewNamespaceIn(t, env.Client), Name: "traced", Management: env.Client, Hosted: blue.Client}
	hostedNS := "h-" + tgt.Namespace
	var previous []convoyv1alpha1.InventoryEntry
	var traces []passTrace
	run := func(name string, e *Engine, tgt *Target, rev *Revision) {
		pipelineTrace.start()
		res, err := e.Sync(ctx, tgt, rev, previous)
		traces = append(traces, pipelineTrace.stop(name))
		g.Expect(err).NotTo(HaveOccurred(), name)
		previous = res.Inventory
	}
	run("install", e, tgt, tracedRevision("r1", hostedNS, "1", "a", "b"))
	run("change and prune", e, tgt, tracedRevision("r2", hostedNS, "2", "a"))
	cm := kubetest.ConfigMap(tgt.Namespace, "a", nil)
	g.Expect(env.Client.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", []byte(`{"data":{"v":"drift"}}`)))).To(Succeed())
	events.deliver(tgt)
	run("drift", e, tgt, tracedRevision("r2", hostedNS, "2", "a"))
	run("again", e, tgt, tracedRevision("r2", hostedNS, "2", "a"))
	stateless := NewEngine(Options{Controller: "trace", Concurrency: 1})
	other := &Target{Namespace: fleet.NewNamespaceIn(t, env.Client), Name: "traced", Management: env.Client, Hosted: blue.Client}
	previous = nil
	run("install, stateless", stateless, other, tracedRevision("r1", "h-"+other.Namespace, "1", "a", "b"))
	return traces
}

// tracedRevision is a revision of ConfigMaps named names in the management cluster, of value
// v, then a Namespace and a ConfigMap in the hosted cluster.
func tracedRevision(id, hostedNS, v string, names ...string) *Revision {
	mgmt := Phase{Name: "management", Class: convoyv1alpha1.ClassManagement}
	for _, name := range names {
		mgmt.Objects = append(mgmt.Objects, kubetest.ConfigMap("", name, map[string]string{"v": v}))
	}
	hosted := Phase{Name: "hosted", Class: convoyv1alpha1.ClassHostedCluster, Objects: []*unstructured.Unstructured{
		kubetest.Object("v1", "Namespace", "", hostedNS, nil),
		kubetest.ConfigMap(hostedNS, "c", map[string]string{"v": v}),
	}}
	return &Revision{ID: id, Phases: []Phase{mgmt, hosted}}
}
