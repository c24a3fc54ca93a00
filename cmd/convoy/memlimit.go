package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// memoryLimitShare is the share of the container's memory limit given to the Go runtime as its
// soft limit: the rest is for what the runtime does not count (stacks of threads in C, the
// binary's pages) and for the time the collector takes to catch up.
const memoryLimitShare = 0.9

// cgroupMemoryFiles are the memory limit files of cgroup v2 and v1, under the cgroup root.
var cgroupMemoryFiles = []string{"memory.max", "memory/memory.limit_in_bytes"}

// applyMemoryLimit sets the Go runtime's soft memory limit to memoryLimitShare of the
// container's memory limit, unless GOMEMLIMIT is set or there is no limit. Without it the heap
// may double between two collections while a whole fleet is applied, and the kernel kills the
// pod before the collector runs. It returns the limit set, zero when none.
func applyMemoryLimit(cgroupRoot string) (int64, error) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	limit, err := containerMemoryLimit(cgroupRoot)
	if err != nil || limit <= 0 {
		return 0, err
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	return soft, nil
}

// containerMemoryLimit reads the memory limit of the cgroup at root, zero when it has none.
func containerMemoryLimit(root string) (int64, error) {
	for _, name := range cgroupMemoryFiles {
		raw, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("reading the container's memory limit: %w", err)
		}
		value := strings.TrimSpace(string(raw))
		if value == "max" {
			return 0, nil
		}
		limit, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading the container's memory limit from %s: %w", name, err)
		}
		// cgroup v1 says "no limit" with a huge number, rounded to the page size.
		if limit >= 1<<62 {
			return 0, nil
		}
		return limit, nil
	}
	return 0, nil
}
