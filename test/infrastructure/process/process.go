package process

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// ErrExitedEarly marks a start that failed because the process exited, which a retry may fix
// (another process took one of its ports).
var ErrExitedEarly = errors.New("exited early")

// Process is one running server binary.
type Process struct {
	// Name is the binary's name.
	Name string
	cmd  *exec.Cmd
	log  string
	// exited is closed when the process has exited.
	exited chan struct{}
}

// Start starts binary name from binDir with args, and env added to the test's environment, its
// output going to <name>.log in dir.
//
// Note: the kernel sends the death signal (SIGKILL) when the thread that forked the child ends,
// not the process, so the goroutine that starts the child keeps its thread locked until the
// child has exited. Upstream's Prometheus and Alertmanager are built unmodified and cannot ask
// for it themselves.
func Start(binDir, dir, name string, args, env []string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(binDir, name), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &Process{Name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		defer func() { _ = logFile.Close() }()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- fmt.Errorf("starting %s: %w", name, err)
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Stop sends SIGTERM to the process group, then SIGKILL after timeout, and waits for the exit.
// A nil Process is already stopped.
func (p *Process) Stop(timeout time.Duration) {
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// ExitError describes an early exit (ErrExitedEarly) with the end of the process's output.
func (p *Process) ExitError() error {
	return fmt.Errorf("%s %w (%v); its last output:\n%s", p.Name, ErrExitedEarly, p.cmd.ProcessState, p.Tail(20))
}

// Tail returns the last n lines the process wrote.
func (p *Process) Tail(n int) string {
	raw, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(raw, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(string(bytes.Join(lines, []byte("\n"))))
}

// FreePorts returns n distinct ports that were free on 127.0.0.1 a moment ago.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
