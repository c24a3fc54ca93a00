package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// stopGrace is how long the controller has to stop after SIGTERM before it is killed.
const stopGrace = 30 * time.Second

// convoyBinary returns path, or the convoy binary next to this one.
func convoyBinary(path string) (string, error) {
	if path == "" {
		self, err := os.Executable()
		if err != nil {
			return "", err
		}
		path = filepath.Join(filepath.Dir(self), "convoy")
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("no convoy binary to run the controller (build it with make build, or pass --convoy): %w", err)
	}
	return path, nil
}

// controllerProcess runs `convoy controller` of bin as a process, as a management cluster runs
// its Deployment, with the demo's settings: no metrics, probe or webhook listeners (several
// demos may run on one machine), no leader election, quick probes and file:// Git.
func controllerProcess(bin string) func(ctx context.Context, cfg *rest.Config, storage string, log io.Writer, args ...string) error {
	return func(ctx context.Context, cfg *rest.Config, storage string, log io.Writer, args ...string) error {
		if err := os.MkdirAll(storage, 0o700); err != nil {
			return err
		}
		kubeconfig := filepath.Join(storage, "controller.kubeconfig")
		if err := writeControllerKubeconfig(cfg, kubeconfig); err != nil {
			return err
		}
		cmd := exec.Command(bin, append([]string{"controller", "--kubeconfig=" + kubeconfig, "--storage-path=" + storage,
			"--metrics-bind-address=0", "--health-probe-bind-address=0", "--leader-elect=false",
			"--webhook-addr=", "--probe-interval=1s", sources.AllowFileURLsFlag,
			"--concurrency=4", "--rollout-concurrency=1"}, args...)...)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting %s controller: %w", bin, err)
		}
		return waitOrStop(ctx, cmd)
	}
}

// approveProcess runs `convoy approve` of bin as a process, as a person types it: the demo
// approves through the command it tells them to type.
func approveProcess(bin string) func(ctx context.Context, kubeconfig, hcpkg, partition string, out io.Writer) error {
	return func(ctx context.Context, kubeconfig, hcpkg, partition string, out io.Writer) error {
		cmd := exec.CommandContext(ctx, bin, "approve", hcpkg, "--partition", partition, "--kubeconfig", kubeconfig)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s approve %s --partition %s: %w", bin, hcpkg, partition, err)
		}
		return nil
	}
}

// sectorsProcess runs `convoy sectors` of bin as a process, as a person types it.
func sectorsProcess(bin string) func(ctx context.Context, url, key string, out io.Writer) error {
	return func(ctx context.Context, url, key string, out io.Writer) error {
		cmd := exec.CommandContext(ctx, bin, "sectors", "--url", url, "--key", key)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s sectors --url %s: %w", bin, url, err)
		}
		return nil
	}
}

// waitOrStop waits for cmd; when ctx ends first it sends SIGTERM, then SIGKILL after stopGrace.
// A controller that stops on the demo's SIGTERM exits cleanly.
func waitOrStop(ctx context.Context, cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) && !exit.Exited() {
			return nil
		}
		return err
	case <-time.After(stopGrace):
		_ = cmd.Process.Kill()
		return fmt.Errorf("the controller did not stop within %s of SIGTERM and was killed: %w", stopGrace, <-done)
	}
}

// writeControllerKubeconfig writes cfg as a kubeconfig at path, with its impersonation.
func writeControllerKubeconfig(cfg *rest.Config, path string) error {
	raw, err := simfleet.KubeConfigFor(cfg, "convoy-dev")
	if err != nil {
		return err
	}
	kc, err := clientcmd.Load(raw)
	if err != nil {
		return err
	}
	auth := kc.AuthInfos["convoy-dev"]
	auth.Impersonate, auth.ImpersonateGroups = cfg.Impersonate.UserName, cfg.Impersonate.Groups
	return clientcmd.WriteToFile(*kc, path)
}
