package fleet_test

import (
	"os"
	"syscall"
)

// syscallKill kills the current process the hard way: no deferred function, no TestMain cleanup.
func syscallKill() error {
	return syscall.Kill(os.Getpid(), syscall.SIGKILL)
}
