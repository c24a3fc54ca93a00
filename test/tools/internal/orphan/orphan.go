package orphan

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// DieWithParent asks the kernel to kill this process when its parent exits, so that an API
// server started by a test that crashed (panic, timeout) does not outlive it. It exits at once
// if the parent is already gone.
func DieWithParent() {
	parent := os.Getppid()
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0)
	if os.Getppid() != parent {
		os.Exit(1)
	}
}
