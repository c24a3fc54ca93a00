package manifests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"text/template"

	"golang.org/x/sys/unix"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/convoy-gitops/convoy/manifests/probe"
)

// maxStack bounds a goroutine's stack in a render process with the given memory budget, so
// that runaway recursion (a value that contains itself, printed) ends as a stack overflow before
// the memory limit: a quarter of the budget (growing a stack copies it), at most 64 MiB.
func maxStack(memory int64) int64 {
	return min(64<<20, memory/4)
}

// init turns any binary that links this package into a render process when it was started as
// one (renderIsolated sets renderChildEnv): the controller, the CLI and every test binary alike,
// before their main or TestMain runs.
func init() {
	runRenderChildIfRequested()
}

// runRenderChildIfRequested renders the request on standard input and exits when the process
// was started as a render process, and returns otherwise.
func runRenderChildIfRequested() {
	limit, ok := os.LookupEnv(renderChildEnv)
	if !ok {
		return
	}
	memory, err := strconv.ParseInt(limit, 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bad %s: %v\n", renderChildEnv, err)
		os.Exit(3)
	}
	cpu, _ := strconv.ParseUint(os.Getenv(renderCPUEnv), 10, 64)
	os.Exit(runRenderChild(os.Stdin, os.Stdout, memory, cpu))
}

// runRenderChild reads a renderRequest, limits the process, executes the request and writes
// its events; it returns the exit code.
func runRenderChild(in io.Reader, out io.Writer, memory int64, cpuSeconds uint64) int {
	raw, err := io.ReadAll(in)
	if err != nil {
		fmt.Fprintf(os.Stderr, "reading the request: %v\n", err)
		return 3
	}
	var req renderRequest
	if err := utiljson.Unmarshal(raw, &req); err != nil {
		fmt.Fprintf(os.Stderr, "decoding the request: %v\n", err)
		return 3
	}
	exitAtCPULimit()
	if err := limitProcess(memory, cpuSeconds); err != nil {
		fmt.Fprintf(os.Stderr, "limiting the render process: %v\n", err)
		return 3
	}
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	emit := func(ev renderEvent) {
		_ = enc.Encode(ev)
		if ev.Start != "" {
			_ = w.Flush()
		}
	}
	if req.Chart != nil {
		renderChart(*req.Chart, req.Size, emit)
	} else {
		executeTemplates(req, emit)
	}
	if err := w.Flush(); err != nil {
		return 3
	}
	return 0
}

// exitCPULimit is the exit code of a render process that reached its CPU limit.
const exitCPULimit = 4

// exitAtCPULimit makes the process exit with exitCPULimit when the kernel signals that it
// reached its soft CPU limit (SIGXCPU). The parent then knows the limit stopped it, however
// the kernel's tick-sampled CPU time and the exact one reported at exit differ on a busy
// machine; the hard limit, a second later, kills a process that does not get to exit.
func exitAtCPULimit() {
	xcpu := make(chan os.Signal, 1)
	signal.Notify(xcpu, unix.SIGXCPU)
	go func() {
		<-xcpu
		os.Exit(exitCPULimit)
	}()
}

// limitProcess sets the kernel limits of the render process: CPU time (SIGXCPU at the budget,
// SIGKILL a second later), and data segment (the memory already mapped plus the budget), bounds
// goroutine stacks, and makes the process the first the kernel kills when memory runs out,
// before the controller.
func limitProcess(memory int64, cpuSeconds uint64) error {
	debug.SetMaxStack(int(maxStack(memory)))
	// Best effort: there is no /proc outside Linux.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	if cpuSeconds > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_CPU, &unix.Rlimit{Cur: cpuSeconds, Max: cpuSeconds + 1}); err != nil {
			return fmt.Errorf("RLIMIT_CPU: %w", err)
		}
	}
	if raceDetector {
		return nil
	}
	base, err := dataSize()
	if err != nil {
		return err
	}
	limit := uint64(base + memory)
	return unix.Setrlimit(unix.RLIMIT_DATA, &unix.Rlimit{Cur: limit, Max: limit})
}

// dataSize returns the process's data segment as the kernel counts it against RLIMIT_DATA
// (VmData of /proc/self/status), in bytes.
func dataSize() (int64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmData:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmData in /proc/self/status")
}

// executeTemplates parses every template of req as one set, so that define and include work
// across files, and executes those req names, emitting an event before each execution and
// one per result. Outputs share the package's size budget.
func executeTemplates(req renderRequest, emit func(renderEvent)) {
	var root *template.Template
	root = template.New("").Option("missingkey=error").Funcs(templateFuncs(&root))
	typeEmptyPackageMetadata(req.Data)
	root.Funcs(template.FuncMap{"cel": func(expr string) (bool, error) {
		return probe.EvalFilter(expr, req.Data, req.Conditions)
	}})
	failed := map[string]bool{}
	for _, t := range req.Templates {
		if _, err := root.New(t.Path).Parse(t.Text); err != nil {
			emit(renderEvent{Errors: []*Error{templateError(t.Path, err)}})
			failed[t.Path] = true
		}
	}
	size := req.Size
	for _, p := range req.Execute {
		if failed[p] {
			continue
		}
		emit(renderEvent{Start: p})
		var buf bytes.Buffer
		budget := min(MaxFileSize, MaxPackageSize-size)
		if err := root.ExecuteTemplate(&limitedWriter{w: &buf, n: budget}, p, req.Data); err != nil {
			emit(renderEvent{File: p, Errors: []*Error{templateError(p, err)}})
			continue
		}
		size += buf.Len()
		emit(renderEvent{File: p, Output: buf.Bytes()})
	}
}
