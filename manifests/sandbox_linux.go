package manifests

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the render process when the thread that started it
// exits: a controller killed mid-render (a leader's pod, an OOM kill) leaves no render process
// running on, orphaned, until its CPU limit.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
