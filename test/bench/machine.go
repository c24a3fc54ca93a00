package bench

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
)

// machineCPU is the machine's CPU time so far, from the first line of /proc/stat: busy is
// every state but idle and iowait, across all cores.
type machineCPU struct {
	busy, total time.Duration
}

// readMachineCPU reads /proc/stat.
func readMachineCPU() (machineCPU, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return machineCPU{}, errors.New("/proc/stat: no cpu line")
	}
	var m machineCPU
	for i, f := range fields[1:] {
		if i >= 8 { // guest and guest_nice are counted in user and nice already
			break
		}
		ticks, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return machineCPU{}, err
		}
		d := time.Duration(ticks) * time.Second / clockTicks
		m.total += d
		if i != 3 && i != 4 { // idle, iowait
			m.busy += d
		}
	}
	return m, nil
}

// sub returns m minus o.
func (m machineCPU) sub(o machineCPU) machineCPU {
	return machineCPU{busy: m.busy - o.busy, total: m.total - o.total}
}

// ownCPU returns the benchmark process's CPU time so far: the floors' clients run in it.
func ownCPU() (time.Duration, error) { return cpuTime(os.Getpid()) }
