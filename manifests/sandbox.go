package manifests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Environment of a render process (see runRenderChildIfRequested).
const (
	// renderChildEnv marks a process started to render templates; its value is the render
	// budget's memory limit in bytes.
	renderChildEnv = "CONVOY_RENDER_CHILD"
	// renderCPUEnv is the CPU limit of a render process, in seconds.
	renderCPUEnv = "CONVOY_RENDER_CPU_SECONDS"
)

// maxChildStderr bounds what is kept of a render process's standard error.
const maxChildStderr = 8 << 10

// renderRequest is what a render process is given on its standard input: every template of the
// package and the data to execute those named by Execute with.
type renderRequest struct {
	// Templates in lexical order of their paths, helpers included.
	Templates []templateFile `json:"templates"`
	// Execute lists the templates to execute, in order.
	Execute []string `json:"execute"`
	// Data is the template context.
	Data map[string]any `json:"data"`
	// Conditions are the results of spec.filter.conditions, cond in the cel function.
	Conditions map[string]bool `json:"conditions,omitempty"`
	// Size is the package's size before the templates' output, counted against MaxPackageSize.
	Size int `json:"size"`
	// Chart, when set, is a Helm chart to render instead of the templates.
	Chart *chartRequest `json:"chart,omitempty"`
}

// templateFile is one template of a renderRequest.
type templateFile struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

// renderEvent is one line of a render process's standard output: the start of a template's
// execution, or a result (parse errors, or one template's output or errors).
type renderEvent struct {
	// Start names the template whose execution begins.
	Start string `json:"start,omitempty"`
	// File names the template a result is for; empty for parse errors.
	File string `json:"file,omitempty"`
	// Output is the template's output.
	Output []byte `json:"output,omitempty"`
	// Errors are the problems found.
	Errors []*Error `json:"errors,omitempty"`
	// PeakRSS is the render process's peak resident memory in bytes, reported at its end.
	PeakRSS int64 `json:"peakRSS,omitempty"`
}

// renderResult is what executing a renderRequest gave: outputs by template path, and problems.
type renderResult struct {
	outputs map[string][]byte
	errs    []*Error
	// running is the template whose execution started last without a result.
	running string
	// peakRSS is the render process's peak resident memory, in bytes.
	peakRSS int64
}

// add records an event.
func (r *renderResult) add(ev renderEvent) {
	r.peakRSS = max(r.peakRSS, ev.PeakRSS)
	if ev.Start != "" {
		r.running = ev.Start
		return
	}
	if ev.File != "" {
		r.running = ""
		if ev.Errors == nil {
			r.outputs[ev.File] = ev.Output
		}
	}
	r.errs = append(r.errs, ev.Errors...)
}

// size is what a result counts against a Cache's byte bound: its outputs and problems.
func (r *renderResult) size() int64 {
	var n int64
	for name, out := range r.outputs {
		n += int64(len(name) + len(out))
	}
	for _, e := range r.errs {
		n += int64(len(e.Error()))
	}
	return n
}

// renderIsolated executes req in a child process of the current binary under budget b. When
// the child is stopped by a limit, the template it was executing is blamed with a RuleLimit
// Error. It fails with a plain error, which is not a verdict on the package and is worth a
// retry, when the child cannot be started or fails otherwise.
func renderIsolated(req renderRequest, b RenderBudget) (*renderResult, error) {
	b = b.withDefaults()
	exe, err := selfExecutable()
	if err != nil {
		return nil, fmt.Errorf("finding the executable to render templates with: %w", err)
	}
	input, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the templates to render: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	// The render process gets no environment of the controller's beyond its limits.
	cmd.Env = append([]string{},
		renderChildEnv+"="+strconv.FormatInt(b.Memory, 10),
		renderCPUEnv+"="+strconv.FormatUint(b.cpuSeconds(), 10),
		"GOMEMLIMIT="+strconv.FormatInt(b.Memory, 10),
		"GOMAXPROCS=1", "GOTRACEBACK=none")
	cmd.Stdin = bytes.NewReader(input)
	// Note: the render process dies with the thread that starts it (dieWithParent), so the
	// goroutine keeps that thread until the process is waited for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dieWithParent(cmd)
	stderr := &headBuffer{max: maxChildStderr}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the render process: %w", err)
	}
	res := &renderResult{outputs: map[string][]byte{}}
	readErr := readEvents(stdout, res)
	waitErr := cmd.Wait()
	if waitErr == nil && readErr == nil {
		return res, nil
	}
	reason, limit := stopReason(ctx, cmd.ProcessState, stderr.String(), b, errors.Join(waitErr, readErr))
	if !limit {
		return nil, errors.New(reason)
	}
	res.errs = append(res.errs, &Error{File: res.running, Rule: RuleLimit, Message: reason})
	return res, nil
}

// selfExecutable returns the path that starts the current binary again: /proc/self/exe where
// there is one, which works even when the file was replaced on disk (an upgrade in place).
func selfExecutable() (string, error) {
	const procSelf = "/proc/self/exe"
	if _, err := os.Stat(procSelf); err == nil {
		return procSelf, nil
	}
	return os.Executable()
}

// readEvents decodes the child's events until the end of its output.
func readEvents(r io.Reader, res *renderResult) error {
	dec := json.NewDecoder(r)
	for {
		var ev renderEvent
		err := dec.Decode(&ev)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			_, _ = io.Copy(io.Discard, r)
			return fmt.Errorf("reading the render process's output: %w", err)
		}
		res.add(ev)
	}
}

// stopReason explains why a render process did not finish, and reports whether it hit a limit
// of the budget: the limit, or how it failed.
func stopReason(ctx context.Context, state *os.ProcessState, stderr string, b RenderBudget, err error) (string, bool) {
	const stopped = "rendering was stopped: "
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return stopped + fmt.Sprintf("it took longer than %s (render timeout, --render-timeout)", b.Timeout), true
	case killedAtCPULimit(state, b):
		return stopped + fmt.Sprintf("it used more than %s of CPU time (render CPU limit, --render-cpu-limit)", b.CPU), true
	case strings.Contains(stderr, "stack exceeds") || strings.Contains(stderr, "stack overflow"):
		return stopped + fmt.Sprintf("it recursed too deep (stack limit %s; a value that contains itself, or unbounded include)", formatBytes(maxStack(b.Memory))), true
	case outOfMemory(stderr):
		return stopped + fmt.Sprintf("it needed more than %s of memory (render memory limit, --render-memory-limit)", formatBytes(b.Memory)), true
	}
	msg := "the render process failed"
	if state != nil {
		msg += " (" + state.String() + ")"
	}
	if line := firstLine(stderr); line != "" {
		msg += ": " + line
	} else if err != nil {
		msg += ": " + err.Error()
	}
	return msg, false
}

// outOfMemory reports a render process that the kernel refused memory under its data limit:
// an allocation, or the stack of a new thread (the runtime then cannot create the thread and
// stops, under load as much as on a big render).
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "pthread_create failed", "failed to create new OS thread"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// killedAtCPULimit reports whether a process stopped at its CPU limit: it exited as told to at
// the soft limit (exitCPULimit), or was killed (the hard RLIMIT_CPU, a second later, sends
// SIGKILL) after using about as much CPU time.
func killedAtCPULimit(state *os.ProcessState, b RenderBudget) bool {
	if state == nil {
		return false
	}
	if state.ExitCode() == exitCPULimit {
		return true
	}
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || (ws.Signal() != syscall.SIGKILL && ws.Signal() != syscall.SIGXCPU) {
		return false
	}
	return usedCPU(state) >= time.Duration(b.cpuSeconds())*time.Second*9/10
}

// usedCPU returns the CPU time a finished process used, user and system.
func usedCPU(state *os.ProcessState) time.Duration {
	if state == nil {
		return 0
	}
	return state.UserTime() + state.SystemTime()
}

// firstLine returns the first non-blank line of s.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// headBuffer keeps the first max bytes written to it and drops the rest.
type headBuffer struct {
	buf bytes.Buffer
	max int
}

// Write keeps what fits.
func (t *headBuffer) Write(p []byte) (int, error) {
	if room := t.max - t.buf.Len(); room > 0 {
		t.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// String returns what was kept.
func (t *headBuffer) String() string { return t.buf.String() }
