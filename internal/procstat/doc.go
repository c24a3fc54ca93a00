// Package procstat reads what Linux says of a process in /proc/<pid>/status: its peak resident
// memory, for the render child's report and the tests' memory bounds; and the CPU time of the
// calling thread (ThreadCPU), which a pass locked to its thread measures its own work with.
package procstat
