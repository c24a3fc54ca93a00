package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Self is the pid PeakRSS reads as the calling process.
const Self = 0

// PeakRSS returns the peak resident set (VmHWM) of process pid, or of the calling process for
// Self, in bytes.
func PeakRSS(pid int) (int64, error) {
	path := "/proc/self/status"
	if pid != Self {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kib << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in %s", path)
}
