package manifests

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// hostileBudget is small, so that the hostile packages are stopped quickly; a real package
// renders in a fraction of it.
var hostileBudget = RenderBudget{CPU: 2 * time.Second, Timeout: time.Minute, Memory: 64 << 20}

// loadHostile loads a package of testdata/hostile under budget b and returns its problems, how
// long it took and how much the test process's heap grew.
func loadHostile(t *testing.T, name string, b RenderBudget) (Errors, time.Duration, uint64) {
	t.Helper()
	root, err := os.OpenRoot("testdata/hostile/" + name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = root.Close() })
	before := heapInUse()
	start := time.Now()
	r, err := LoadWithBudget(root.FS(), ".", TemplateData{Package: PackageRef{Name: name, Namespace: "ns"}}, b)
	took := time.Since(start)
	grew := max(heapInUse(), before) - before
	var errs Errors
	if !errors.As(err, &errs) || r != nil {
		t.Fatalf("want Errors, got %v (%v)", err, r)
	}
	t.Logf("%s: %s in %s, test process heap +%d KiB", name, errs, took.Round(time.Millisecond), grew>>10)
	return errs, took, grew
}

// heapInUse returns the test process's heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestHostileTemplatesAreStopped runs each hostile template of testdata/hostile: each must be
// stopped by its limit within seconds, blamed on its file, while the test process's own memory
// stays put. (The render process's peak RSS cannot be read here: the kernel reports the test
// process's own peak for a child it started; the figures of docs/evidence/reliability.md come from
// `convoy render`.)
func TestHostileTemplatesAreStopped(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"nested-range", "configmap.yaml.gotmpl", "it used more than 2s of CPU time (render CPU limit, --render-cpu-limit)"},
		{"include-fanout", "configmap.yaml.gotmpl", "it used more than 2s of CPU time"},
		{"string-doubling", "configmap.yaml.gotmpl", "it needed more than 64 MiB of memory (render memory limit, --render-memory-limit)"},
		{"self-map", "configmap.yaml.gotmpl", "it recursed too deep (stack limit 16 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if raceDetector && tc.name == "string-doubling" {
				t.Skip("the race detector's shadow memory cannot live under the render memory budget")
			}
			g := NewWithT(t)
			errs, took, grew := loadHostile(t, tc.name, hostileBudget)
			g.Expect(errs).To(haveProblem(tc.file, RuleLimit, "rendering was stopped: "+tc.want))
			g.Expect(errs).To(HaveLen(1))
			g.Expect(took).To(BeNumerically("<", 30*time.Second), "a CPU second takes longer on a busy machine")
			g.Expect(grew).To(BeNumerically("<", 16<<20), "the test process's heap grew")
		})
	}
}

// TestAProcessStoppedAtItsCPULimitIsToldApart checks how a render process's end is read: the
// exit it makes at its soft CPU limit is the limit, whatever CPU time the kernel reports at exit
// (on a busy machine that can be less than the limit), and another SIGKILL is not.
func TestAProcessStoppedAtItsCPULimitIsToldApart(t *testing.T) {
	g := NewWithT(t)
	budget := RenderBudget{CPU: 2 * time.Second}
	for _, tc := range []struct {
		script string
		limit  bool
	}{
		{"exit 4", true},
		{"exit 3", false},
		{"kill -9 $$", false},
	} {
		cmd := exec.Command("sh", "-c", tc.script)
		_ = cmd.Run()
		g.Expect(killedAtCPULimit(cmd.ProcessState, budget)).To(Equal(tc.limit), tc.script)
	}
}

// TestIncludeRecursionFailsFast checks that include's own depth bound stops recursion with a
// template error, without reaching the budget.
func TestIncludeRecursionFailsFast(t *testing.T) {
	g := NewWithT(t)
	errs, took, _ := loadHostile(t, "include-recursion", hostileBudget)
	g.Expect(errs).To(haveProblem("configmap.yaml.gotmpl", RuleTemplate, `include "again": nested more than 100 deep`))
	g.Expect(took).To(BeNumerically("<", 5*time.Second))
}

// TestRenderTimeoutStopsARender checks the wall-clock limit: a CPU-bound render with a generous
// CPU limit is killed at the deadline.
func TestRenderTimeoutStopsARender(t *testing.T) {
	g := NewWithT(t)
	errs, took, _ := loadHostile(t, "nested-range", RenderBudget{CPU: time.Minute, Timeout: time.Second, Memory: 64 << 20})
	g.Expect(errs).To(haveProblem("configmap.yaml.gotmpl", RuleLimit, "rendering was stopped: it took longer than 1s (render timeout, --render-timeout)"))
	g.Expect(took).To(BeNumerically("<", 5*time.Second))
}

// TestCacheRendersAHostilePackageOnce checks that the render cache keeps a stopped render's
// error, so that a distinct input pays the budget once.
func TestCacheRendersAHostilePackageOnce(t *testing.T) {
	g := NewWithT(t)
	root, err := os.OpenRoot("testdata/hostile")
	g.Expect(err).NotTo(HaveOccurred())
	defer root.Close()
	c := NewCacheWithOptions(CacheOptions{Budget: RenderBudget{CPU: time.Second, Timeout: time.Minute, Memory: 64 << 20}})
	key := Key{Source: "ns/hostile", Commit: "c1", Dir: "nested-range"}
	for range 3 {
		_, err := c.Load(key, TemplateData{Package: PackageRef{Name: "p"}}, func() (fs.FS, error) { return root.FS(), nil })
		g.Expect(err).To(MatchError(ContainSubstring("configmap.yaml.gotmpl: limit: rendering was stopped: it used more than 1s of CPU time")))
	}
	g.Expect(c.Stats().Misses).To(Equal(int64(1)))
}

// TestSandboxedRenderMatchesInProcess checks that a render process gives what executing the
// templates in the test process gives.
func TestSandboxedRenderMatchesInProcess(t *testing.T) {
	g := NewWithT(t)
	fsys := benchPackage(50)
	pf, ok := readPackage(fsys, ".", false, &errorList{})
	g.Expect(ok).To(BeTrue())
	req := renderRequestOf(pf, templateContext(benchData, benchData.Config, &manifest{}))
	isolated, err := renderIsolated(req, DefaultRenderBudget)
	g.Expect(err).NotTo(HaveOccurred())
	inProcess := &renderResult{outputs: map[string][]byte{}}
	executeTemplates(req, inProcess.add)
	g.Expect(isolated.errs).To(BeEmpty())
	g.Expect(isolated.outputs).To(Equal(inProcess.outputs))
}

// renderRequestOf builds the request that executes every template of pf.
func renderRequestOf(pf *packageFiles, data map[string]any) renderRequest {
	req := renderRequest{Data: data, Size: pf.size}
	for _, p := range pf.paths {
		if isTemplate(p) {
			req.Templates = append(req.Templates, templateFile{Path: p, Text: string(pf.data[p])})
			req.Execute = append(req.Execute, p)
		}
	}
	return req
}

// BenchmarkRenderTemplates compares executing a 100-object template in a render process with
// executing it in the benchmark's own process.
func BenchmarkRenderTemplates(b *testing.B) {
	pf, _ := readPackage(benchPackage(200), ".", false, &errorList{})
	req := renderRequestOf(pf, templateContext(benchData, benchData.Config, &manifest{}))
	b.Run("isolated", func(b *testing.B) {
		for b.Loop() {
			if res, err := renderIsolated(req, DefaultRenderBudget); err != nil || len(res.errs) > 0 {
				b.Fatal(err, res.errs)
			}
		}
	})
	b.Run("in-process", func(b *testing.B) {
		for b.Loop() {
			res := &renderResult{outputs: map[string][]byte{}}
			executeTemplates(req, res.add)
			if len(res.errs) > 0 {
				b.Fatal(res.errs)
			}
		}
	})
}

// TestQuadraticCELRulesAreRefused checks that a probe or a config rule of quadratic cost is
// refused when the package loads, before it is ever evaluated.
func TestQuadraticCELRulesAreRefused(t *testing.T) {
	g := NewWithT(t)
	errs, _, _ := loadHostile(t, "quadratic-probe", hostileBudget)
	g.Expect(errs).To(haveProblem("manifest.yaml", RuleProbe, "is too expensive: its estimated worst-case cost"))
	errs, _, _ = loadHostile(t, "quadratic-config-rule", hostileBudget)
	g.Expect(errs).To(haveProblem("manifest.yaml", RuleConfigSchema,
		"spec.config.openAPIV3Schema.properties[names].x-kubernetes-validations[0].rule: Forbidden: rule is too expensive: its estimated worst-case cost"))
}

// TestRenderChildRefusesABadRequest checks that a render process given something other than a
// request fails, without rendering.
func TestRenderChildRefusesABadRequest(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	g.Expect(runRenderChild(strings.NewReader("not a request"), &out, 64<<20, 1)).To(Equal(3))
	g.Expect(out.Len()).To(BeZero())
}

// A render process that cannot create a thread under its data limit ran out of memory: the
// stack of a new thread counts against the limit like any allocation.
func TestAThreadRefusedUnderTheDataLimitIsTheMemoryLimit(t *testing.T) {
	g := NewWithT(t)
	b := RenderBudget{Memory: 32 << 20}
	for _, stderr := range []string{
		"runtime/cgo: pthread_create failed: Resource temporarily unavailable",
		"runtime: failed to create new OS thread (have 5 already; errno=11)",
		"fatal error: runtime: out of memory",
	} {
		msg, limit := stopReason(context.Background(), nil, stderr, b, nil)
		g.Expect(limit).To(BeTrue(), stderr)
		g.Expect(msg).To(ContainSubstring("it needed more than 32 MiB of memory"), stderr)
	}
	msg, limit := stopReason(context.Background(), nil, "panic: something else", b, nil)
	g.Expect(limit).To(BeFalse())
	g.Expect(msg).To(HavePrefix("the render process failed"))
}
