package manifests

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// renderParentEnv makes the test binary, started by TestRenderProcessDiesWithItsParent, the
// parent of a render that does not end.
const renderParentEnv = "CONVOY_TEST_RENDER_PARENT"

// TestRenderProcessDiesWithItsParent kills (SIGKILL) a process in the middle of a render, as a
// leader's pod is killed: its render process must die with it, not render on, orphaned, until
// its CPU limit (a minute here). The soak (test/bench) counts such orphans at every sample.
func TestRenderProcessDiesWithItsParent(t *testing.T) {
	if os.Getenv(renderParentEnv) != "" {
		_, _, _ = loadHostile(t, "nested-range", RenderBudget{CPU: time.Minute, Timeout: 2 * time.Minute, Memory: 64 << 20})
		return
	}
	g := NewWithT(t)
	parent := exec.Command(os.Args[0], "-test.run=^TestRenderProcessDiesWithItsParent$", "-test.count=1")
	parent.Env = append(os.Environ(), renderParentEnv+"=1")
	g.Expect(parent.Start()).To(Succeed())
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	var child int
	g.Eventually(func() int { child = childOf(parent.Process.Pid); return child }, 30*time.Second, 20*time.Millisecond).
		NotTo(BeZero(), "the render process starts")
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	time.Sleep(time.Second) // the request written, the render under way
	g.Expect(parent.Process.Kill()).To(Succeed())
	_ = parent.Wait()
	g.Eventually(func() bool { return running(child) }, 5*time.Second, 20*time.Millisecond).To(BeFalse(),
		"render process %d outlived its parent", child)
}

// childOf returns a child process of pid, or zero.
func childOf(pid int) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, ppid := procStat(p); ppid == pid && state != "Z" {
			return p
		}
	}
	return 0
}

// running reports whether pid is a process that has not exited.
func running(pid int) bool {
	state, _ := procStat(pid)
	return state != "" && state != "Z"
}

// procStat returns the state and parent of pid; "" when there is no such process.
func procStat(pid int) (string, int) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0
	}
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	if len(fields) < 2 {
		return "", 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return fields[0], ppid
}
