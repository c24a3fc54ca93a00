//go:build !linux

package procstat

import "time"

// ThreadCPU returns the CPU time the calling OS thread has used; ok is false where the system
// does not say, as here.
func ThreadCPU() (cpu time.Duration, ok bool) { return 0, false }
