package monitoring_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/monitoring"
)

func TestStopLeavesNoProcess(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	other, err := monitoring.Start(context.Background(), monitoring.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	pids := other.PIDs()

	g.Expect(other.Stop()).To(Succeed())
	g.Expect(other.Stop()).To(Succeed(), "Stop is idempotent")
	g.Expect(other.Dir()).NotTo(BeADirectory())
	for _, pid := range pids {
		g.Expect(isRunning(pid)).To(BeFalse(), "process %d", pid)
	}
}

// crashEnv makes the test binary, re-executed by TestCrashedTestLeavesNoProcess, start both
// servers, print their process IDs and folder, and die without stopping them.
const crashEnv = "MONITORING_TEST_CRASH"

func TestCrashedTestLeavesNoProcess(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), crashEnv+"=1")
	out, _ := cmd.Output()
	fields := strings.Fields(string(out))
	g.Expect(fields).To(HaveLen(3), "the child prints the two process IDs and the servers' folder")
	defer func() { g.Expect(os.RemoveAll(fields[2])).To(Succeed()) }()
	for _, field := range fields[:2] {
		pid, err := strconv.Atoi(field)
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func() bool { return isRunning(pid) }, 10*time.Second).Should(BeFalse(), "process %d", pid)
	}
}

// crashWithRunningServers is the child's body: TestMain calls it instead of the tests.
func crashWithRunningServers() {
	m, err := monitoring.Start(context.Background(), monitoring.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	pids := m.PIDs()
	fmt.Println(pids[0], pids[1], m.Dir())
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
}

// isRunning tells whether pid is a process that is neither gone nor a zombie waiting for a
// parent to reap it (a container's init may never reap the orphans).
func isRunning(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	rest := string(raw[strings.LastIndexByte(string(raw), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}
