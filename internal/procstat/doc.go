// Package procstat reads what Linux says of a process in /proc/<pid>/status: its peak resident
// memory, for the render child's report and the tests' memory bounds.
package procstat
