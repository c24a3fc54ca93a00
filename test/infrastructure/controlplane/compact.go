package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// etcdCallTimeout bounds one call to etcd's JSON gateway; a compaction of a few hundred
// thousand revisions takes about a second on 2 cores.
const etcdCallTimeout = time.Minute

// CompactStorage discards etcd's history up to its current revision, as the API server's
// periodic compaction (every 5 minutes) does in a long-lived cluster. A benchmark calls it
// before each measured pass, so that no pass pays for the history of the passes before it and a
// periodic compaction that would land in one pass and not another has little to do. The API
// server's compactor does not learn of it (it keeps its own revision in compact_rev_key): its
// next compaction, at an older revision, fails and logs "compact failed", which is harmless.
func (cp *ControlPlane) CompactStorage(ctx context.Context) error {
	revision, err := cp.etcdRevision(ctx)
	if err != nil {
		return err
	}
	return cp.compactAt(ctx, revision)
}

// etcdRevision returns etcd's current revision.
func (cp *ControlPlane) etcdRevision(ctx context.Context) (string, error) {
	var state struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// A count of one key returns the store's revision in the header.
	if err := cp.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": []byte("compact_rev_key"), "count_only": true}, &state); err != nil {
		return "", err
	}
	if _, err := strconv.ParseInt(state.Header.Revision, 10, 64); err != nil {
		return "", fmt.Errorf("reading etcd's revision: %q: %w", state.Header.Revision, err)
	}
	return state.Header.Revision, nil
}

// compactAt compacts etcd's history up to revision; a revision compacted already, by the API
// server or an earlier call, is no error.
func (cp *ControlPlane) compactAt(ctx context.Context, revision string) error {
	err := cp.etcdCall(ctx, "/v3/kv/compaction", map[string]any{"revision": revision, "physical": true}, nil)
	if err != nil && strings.Contains(err.Error(), errAlreadyCompacted) {
		return nil
	}
	return err
}

// maxEtcdAnswer bounds what is read of an answer of etcd's gateway: the calls here answer a
// header and at most one small key.
const maxEtcdAnswer = 1 << 20

// errAlreadyCompacted is etcd's answer to a compaction at or below the compacted revision.
const errAlreadyCompacted = "required revision has been compacted"

// etcdCall posts body to path of etcd's JSON gateway and decodes the answer into out, when set.
func (cp *ControlPlane) etcdCall(ctx context.Context, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, etcdCallTimeout)
	defer cancel()
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cp.etcdURL+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("calling etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxEtcdAnswer))
	if err != nil {
		return fmt.Errorf("reading etcd's answer to %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, answer)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(answer, out)
}
