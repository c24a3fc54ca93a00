package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/kubernetes"
)

// captureAPIServerProfile writes a CPU profile of the management API server over seconds to
// path, from its /debug/pprof (kube-apiserver's --profiling, on by default): where the server
// spends the CPU a rollout costs it, beside the bare loop's.
func (e *env) captureAPIServerProfile(ctx context.Context, seconds int, path string) error {
	cs, err := kubernetes.NewForConfig(e.fleet.Config)
	if err != nil {
		return err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(seconds)).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("profiling the API server: %w", err)
	}
	return os.WriteFile(path, raw, 0o600)
}

// startAPIServerProfile captures the API server's CPU profile in the background when
// -pprof is set, to DIR/<name>.apiserver.cpu.pprof; the returned function waits for it and
// notes a failure in the results.
func (e *env) startAPIServerProfile(ctx context.Context, res *Results, name string, seconds int) func() {
	if e.cfg.PprofDir == "" {
		return func() {}
	}
	done := make(chan error, 1)
	go func() {
		done <- e.captureAPIServerProfile(ctx, seconds, filepath.Join(e.cfg.PprofDir, name+".apiserver.cpu.pprof"))
	}()
	return func() {
		if err := <-done; err != nil {
			res.note("pprof API server %s: %v", name, err)
		}
	}
}
