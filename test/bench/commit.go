package bench

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
)

// convoyCommit returns the abbreviated Git revision the convoy binary was built from, as its
// `version -o json` says it, with "-dirty" kept; empty when the binary does not say. The
// results carry it so that a published table names the code it measured.
func convoyCommit(ctx context.Context, binary string) string {
	out, err := exec.CommandContext(ctx, binary, "version", "-o", "json").Output()
	if err != nil {
		return ""
	}
	var v struct {
		Revision string `json:"revision"`
	}
	if json.Unmarshal(out, &v) != nil {
		return ""
	}
	return abbreviateRevision(v.Revision)
}

// abbreviateRevision shortens a full revision to 7 hex digits, keeping a "-dirty" suffix;
// "unknown" and "" give "".
func abbreviateRevision(rev string) string {
	hash, dirty := strings.CutSuffix(rev, "-dirty")
	if hash == "" || hash == "unknown" {
		return ""
	}
	if len(hash) > 7 {
		hash = hash[:7]
	}
	if dirty {
		return hash + "-dirty"
	}
	return hash
}
