package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat (100 on Linux).
const clockTicks = 100

// Controller is `convoy controller` running as a child process against the management server.
type Controller struct {
	cmd         *exec.Cmd
	metricsAddr string
	// pprofAddr serves /debug/pprof (--pprof-bind-address).
	pprofAddr string
	log       *os.File
	done      chan error
}

// ControllerInput says how to start the controller.
type ControllerInput struct {
	// Binary is bin/convoy.
	Binary string
	// Kubeconfig is the path of the management server's kubeconfig.
	Kubeconfig string
	// Dir holds the controller's Git storage and its log.
	Dir string
	// Concurrency is --concurrency.
	Concurrency int
	// Args are more flags of `convoy controller`.
	Args []string
	// Restart numbers a restart of the controller, whose log goes to controller-<n>.log; zero
	// for the first start (controller.log).
	Restart int
	// LeaseNamespace turns leader election on, with the lease in that namespace.
	LeaseNamespace string
	// MemoryLimit, when set, is the controller's GOMEMLIMIT.
	MemoryLimit string
}

// StartController starts the controller and waits until its health endpoint answers.
func StartController(ctx context.Context, in ControllerInput) (*Controller, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	logName := "controller.log"
	if in.Restart > 0 {
		logName = fmt.Sprintf("controller-%d.log", in.Restart)
	}
	logFile, err := os.Create(filepath.Join(in.Dir, logName))
	if err != nil {
		return nil, err
	}
	c := &Controller{metricsAddr: ports[0], pprofAddr: ports[2], log: logFile, done: make(chan error, 1)}
	election := []string{"--leader-elect=false"}
	if in.LeaseNamespace != "" {
		election = []string{"--leader-elect=true", "--leader-election-namespace", in.LeaseNamespace}
	}
	args := append([]string{"controller", "--kubeconfig", in.Kubeconfig,
		"--metrics-bind-address", ports[0], "--metrics-secure=false", "--health-probe-bind-address", ports[1],
		"--webhook-addr=", "--storage-path", filepath.Join(in.Dir, "sources"),
		"--concurrency", strconv.Itoa(in.Concurrency), "--pprof-bind-address", ports[2]}, election...)
	c.cmd = exec.Command(in.Binary, append(args, in.Args...)...)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	if in.MemoryLimit != "" {
		c.cmd.Env = append(os.Environ(), "GOMEMLIMIT="+in.MemoryLimit)
	}
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s controller: %w", in.Binary, err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	if err := c.waitHealthy(ctx, "http://"+ports[1]+"/readyz"); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// waitHealthy polls url until it answers 200 or the process exits.
func (c *Controller) waitHealthy(ctx context.Context, url string) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-c.done:
			c.done <- err
			return fmt.Errorf("the controller exited: %w (see %s)", err, c.log.Name())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("the controller is not ready after a minute (see %s)", c.log.Name())
}

// Stop sends SIGTERM, waits up to 20 s, then kills.
func (c *Controller) Stop() error {
	defer func() { _ = c.log.Close() }()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		_ = err // Note: the exit status of a controller stopped by SIGTERM says nothing.
		return nil
	case <-time.After(20 * time.Second):
		return c.cmd.Process.Kill()
	}
}

// PID is the process id of the controller.
func (c *Controller) PID() int { return c.cmd.Process.Pid }

// Exited reports whether the controller process has ended (crashed, or was stopped).
func (c *Controller) Exited() bool {
	select {
	case err := <-c.done:
		c.done <- err
		return true
	default:
		return false
	}
}

// LogPath is the file the controller's stdout and stderr go to.
func (c *Controller) LogPath() string { return c.log.Name() }

// MetricsAddress returns the host:port the controller serves its /metrics on.
func (c *Controller) MetricsAddress() string { return c.metricsAddr }

// Kill sends SIGKILL, as the kernel's OOM killer or a node failure would, and waits for the
// process to exit.
func (c *Controller) Kill() error {
	defer func() { _ = c.log.Close() }()
	if err := c.cmd.Process.Kill(); err != nil {
		return err
	}
	err := <-c.done
	_ = err // Note: the exit status of a killed process says nothing.
	return nil
}

// Pause stops the process (SIGSTOP) without losing its state; Resume continues it.
func (c *Controller) Pause() error { return c.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused process.
func (c *Controller) Resume() error { return c.cmd.Process.Signal(syscall.SIGCONT) }

// Usage is what the kernel accounts to the controller process.
type Usage struct {
	// CPU is user plus system time.
	CPU time.Duration
	// PeakRSS is VmHWM: the largest resident set since the process started.
	PeakRSS int64
	// RSS is VmRSS now.
	RSS int64
}

// Usage reads /proc/<pid>/stat and /proc/<pid>/status.
func (c *Controller) Usage() (Usage, error) {
	pid := c.cmd.Process.Pid
	cpu, err := cpuTime(pid)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{CPU: cpu}
	u.PeakRSS, u.RSS, err = memory(pid)
	return u, err
}

// cpuTime returns the user plus system time of pid, from /proc/<pid>/stat.
func cpuTime(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: fields are counted after its closing parenthesis.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// memory returns VmHWM and VmRSS of pid in bytes.
func memory(pid int) (hwm, rss int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		switch key {
		case "VmHWM":
			hwm = kb << 10
		case "VmRSS":
			rss = kb << 10
		}
	}
	return hwm, rss, sc.Err()
}

// CaptureProfile writes the controller's pprof profile kind (e.g. "profile?seconds=20" or
// "heap") to path.
func (c *Controller) CaptureProfile(ctx context.Context, kind, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.pprofAddr+"/debug/pprof/"+kind, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req) // a CPU profile takes profileSeconds
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof %s: %s", kind, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// HasController reports whether the controller runs a controller-runtime controller called
// name, from the per-controller series of its metrics. The Package controller's series show
// that the controllers started; name is then looked for once more a second later.
func (c *Controller) HasController(ctx context.Context, name string) (bool, error) {
	deadline := time.Now().Add(time.Minute)
	var grace time.Time // set once the Package controller's series appear
	for time.Now().Before(deadline) {
		raw, err := c.metrics(ctx)
		switch {
		case err != nil:
		case strings.Contains(raw, fmt.Sprintf("controller=%q", name)):
			return true, nil
		case !grace.IsZero() && time.Now().After(grace):
			return false, nil
		case grace.IsZero() && strings.Contains(raw, `controller="package"`):
			grace = time.Now().Add(controllerStartGrace)
		}
		time.Sleep(250 * time.Millisecond)
	}
	return false, fmt.Errorf("no controller series in the controller's metrics after a minute")
}

// controllerStartGrace is how long after the Package controller's series the others may
// appear: the controllers start side by side, and on a loaded machine one second was once
// not enough, which made a rollout run with the wrong driver.
const controllerStartGrace = 15 * time.Second

// Counter returns the value of an unlabelled counter of the controller's metrics; zero when it
// has none.
func (c *Controller) Counter(ctx context.Context, name string) (float64, error) {
	return c.CounterSum(ctx, name+" ")
}

// CounterSum returns the sum of the controller's metric lines that start with prefix (a
// counter's name and its first labels), over the labels that follow; zero when there are none.
func (c *Controller) CounterSum(ctx context.Context, prefix string) (float64, error) {
	sums, err := c.CounterSums(ctx, prefix)
	if err != nil {
		return 0, err
	}
	return sums[0], nil
}

// CounterSums returns the CounterSum of each prefix, from one read of the metrics.
func (c *Controller) CounterSums(ctx context.Context, prefixes ...string) ([]float64, error) {
	raw, err := c.metrics(ctx)
	if err != nil {
		return nil, err
	}
	sums := make([]float64, len(prefixes))
	for line := range strings.Lines(raw) {
		for i, prefix := range prefixes {
			if !strings.HasPrefix(line, prefix) {
				continue
			}
			fields := strings.Fields(line)
			v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
			if err != nil {
				return nil, fmt.Errorf("metric line %q: %w", strings.TrimSpace(line), err)
			}
			sums[i] += v
		}
	}
	return sums, nil
}

// IsLeader reports whether the controller holds the leader election lease, from its
// leader_election_master_status metric.
func (c *Controller) IsLeader(ctx context.Context) (bool, error) {
	raw, err := c.metrics(ctx)
	if err != nil {
		return false, err
	}
	for line := range strings.Lines(raw) {
		if strings.HasPrefix(line, "leader_election_master_status{") {
			return strings.HasSuffix(strings.TrimSpace(line), " 1"), nil
		}
	}
	return false, nil
}

// Metrics returns the controller's Prometheus metrics, as text.
func (c *Controller) Metrics(ctx context.Context) (string, error) { return c.metrics(ctx) }

// metricsClient reads the controller's metrics; a stopped controller fails it, not hangs it.
var metricsClient = &http.Client{Timeout: 10 * time.Second}

// metrics returns the controller's Prometheus metrics.
func (c *Controller) metrics(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.metricsAddr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return string(raw), err
}

// freePorts returns n loopback addresses nobody listens on.
func freePorts(n int) ([]string, error) {
	var out []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}
