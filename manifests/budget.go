package manifests

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Defaults of RenderBudget: far beyond what any real package needs (renders take milliseconds
// and a few MiB), so that only a runaway template meets them.
const (
	// DefaultRenderCPU is the CPU time a render may use.
	DefaultRenderCPU = 10 * time.Second
	// DefaultRenderTimeout is the wall-clock time a render may take: twice the CPU time, so
	// that the CPU limit is what stops a runaway render unless the machine is starved.
	DefaultRenderTimeout = 20 * time.Second
	// DefaultRenderMemory is the memory a render may allocate beyond the render process's own.
	DefaultRenderMemory = 256 << 20
)

// RenderBudget bounds the execution of a package's templates. Templates run in a child process
// of the current binary (any binary that links this package serves as one) under these limits,
// enforced by the kernel and by a deadline: a render that exceeds one is stopped, and Load
// fails with a RuleLimit Error naming the template being executed and the limit it hit.
type RenderBudget struct {
	// CPU is the CPU time the render process may use (RLIMIT_CPU, rounded up to a second).
	CPU time.Duration
	// Timeout is the wall-clock time after which the render process is killed.
	Timeout time.Duration
	// Memory is the memory, in bytes, the render may allocate (RLIMIT_DATA above the process's
	// footprint when it starts rendering, and the Go runtime's memory limit).
	Memory int64
}

// DefaultRenderBudget is the budget of Load and of a Cache created without one.
var DefaultRenderBudget = RenderBudget{CPU: DefaultRenderCPU, Timeout: DefaultRenderTimeout, Memory: DefaultRenderMemory}

// BindFlags registers --render-cpu-limit, --render-timeout and --render-memory-limit on fs,
// with the defaults; the controller, `convoy render` and `convoy validate` share them, so that
// CI refuses what the controller would.
func (b *RenderBudget) BindFlags(fs *pflag.FlagSet) {
	*b = DefaultRenderBudget
	fs.DurationVar(&b.CPU, "render-cpu-limit", b.CPU, "CPU time one render of a package's templates may use.")
	fs.DurationVar(&b.Timeout, "render-timeout", b.Timeout, "Wall-clock time one render of a package's templates may take.")
	fs.Int64Var(&b.Memory, "render-memory-limit", b.Memory, "Bytes of memory one render of a package's templates may allocate.")
}

// withDefaults fills the unset limits from DefaultRenderBudget.
func (b RenderBudget) withDefaults() RenderBudget {
	if b.CPU <= 0 {
		b.CPU = DefaultRenderCPU
	}
	if b.Timeout <= 0 {
		b.Timeout = DefaultRenderTimeout
	}
	if b.Memory <= 0 {
		b.Memory = DefaultRenderMemory
	}
	return b
}

// cpuSeconds is the CPU limit in whole seconds, at least one.
func (b RenderBudget) cpuSeconds() uint64 {
	return uint64(max(1, (b.CPU+time.Second-1)/time.Second))
}

// String describes the budget, for logs.
func (b RenderBudget) String() string {
	return fmt.Sprintf("cpu %s, timeout %s, memory %s", b.CPU, b.Timeout, formatBytes(b.Memory))
}

// formatBytes writes a byte count in MiB when it is a whole number of them.
func formatBytes(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
