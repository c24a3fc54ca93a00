package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// pprofAddrEnv tells a profiled convoy binary where to serve /debug/pprof.
const pprofAddrEnv = "CONVOY_BENCH_PPROF_ADDR"

// pprofOverlay is added to package main of cmd/convoy, through `go build -overlay`, when
// profiles are asked for: `convoy controller` serves no pprof endpoint, and the benchmark
// leaves the command's code alone. It adds nothing but net/http/pprof on its own address.
const pprofOverlay = `package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("` + pprofAddrEnv + `"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
`

// buildProfiledConvoy builds cmd/convoy with the pprof overlay into dir and returns its path.
func buildProfiledConvoy(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	src := filepath.Join(dir, "zz_bench_pprof.go")
	if err := os.WriteFile(src, []byte(pprofOverlay), 0o644); err != nil {
		return "", err
	}
	overlay, err := json.Marshal(map[string]map[string]string{
		"Replace": {filepath.Join(root, "cmd", "convoy", "zz_bench_pprof.go"): src}})
	if err != nil {
		return "", err
	}
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "convoy-pprof")
	cmd := exec.CommandContext(ctx, "go", "build", "-overlay", overlayPath, "-o", bin, "./cmd/convoy")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building convoy with pprof: %w: %s", err, out)
	}
	return bin, nil
}
