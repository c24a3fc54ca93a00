package monitoring

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

// process is one running server binary, in a process group of its own, that the kernel kills
// when the test process dies.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	// exited is closed when the process has exited.
	exited chan struct{}
}

// startProcess starts binary name from binDir with args, its output going to <name>.log in dir.
//
// Note: upstream's Prometheus and Alertmanager are built unmodified, so they cannot ask for
// their own death signal as kube-apiserver and etcd do (test/tools/internal/orphan); the child
// gets it from SysProcAttr instead. The kernel sends it when the thread that forked the child
// ends, not the process, so the goroutine that starts the child keeps its thread locked until
// the child has exited.
func startProcess(binDir, dir, name string, args, env []string) (*process, error) {
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
	p := &process{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
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

// stop sends SIGTERM to the process group, then SIGKILL after timeout, and waits for the exit.
func (p *process) stop(timeout time.Duration) {
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

// exitError describes an early exit with the end of the process's output.
func (p *process) exitError() error {
	return fmt.Errorf("%w: %s (%v); its last output:\n%s", errEarlyExit, p.name, p.cmd.ProcessState, p.tail(20))
}

// tail returns the last n lines the process wrote.
func (p *process) tail(n int) string {
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

// errEarlyExit marks a start that failed because a process exited, which a retry may fix
// (another process took one of its ports).
var errEarlyExit = errors.New("a monitoring server exited early")

// freePorts returns n distinct ports that were free on 127.0.0.1 a moment ago.
func freePorts(n int) ([]int, error) {
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
