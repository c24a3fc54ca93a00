package procstat

import (
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPU returns the CPU time, user and system, the calling OS thread has used; ok is false
// where the system does not say. A goroutine measures its own work with it only while locked to
// its thread (runtime.LockOSThread).
func ThreadCPU() (cpu time.Duration, ok bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
