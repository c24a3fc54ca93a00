package engine

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/convoy-gitops/convoy/test/kubetest"
)

// logLines records the lines of a logger, each decoded from funcr's JSON.
type logLines struct {
	mu    sync.Mutex
	lines []map[string]any
}

// loggingContext returns a context whose logger records into a new logLines.
func loggingContext(t *testing.T) (context.Context, *logLines) {
	rec := &logLines{}
	logger := funcr.NewJSON(func(obj string) {
		line := map[string]any{}
		if err := json.Unmarshal([]byte(obj), &line); err != nil {
			t.Errorf("log line %q: %v", obj, err)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.lines = append(rec.lines, line)
	}, funcr.Options{})
	return ctrl.LoggerInto(context.Background(), logger), rec
}

// take returns the lines recorded since the last take.
func (r *logLines) take() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := r.lines
	r.lines = nil
	return lines
}

func TestSyncLogsOneLinePerClusterChange(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx, logged := loggingContext(t)
	engine := testEngine(Options{Controller: "test"})
	tgt := engineTarget(t)
	r1 := &Revision{ID: "r1", Phases: []Phase{{Name: "only", Objects: []*unstructured.Unstructured{
		kubetest.ConfigMap("", "a", nil), kubetest.ConfigMap("", "b", nil)}}}}

	res, err := engine.Sync(ctx, tgt, r1, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(logged.take()).To(ConsistOf(And(
		HaveKeyWithValue("msg", "Applied revision"), HaveKeyWithValue("revision", "r1"),
		HaveKeyWithValue("objects", BeNumerically("==", 2)))))

	res, err = engine.Sync(ctx, tgt, r1, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changes.Written()).To(BeFalse())
	g.Expect(logged.take()).To(BeEmpty(), "a pass that changes nothing logs nothing")

	r2 := &Revision{ID: "r2", Phases: []Phase{{Name: "only", Objects: []*unstructured.Unstructured{
		kubetest.ConfigMap("", "a", nil)}}}}
	res, err = engine.Sync(ctx, tgt, r2, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(logged.take()).To(ConsistOf(And(
		HaveKeyWithValue("msg", "Pruned objects"), HaveKeyWithValue("revision", "r2"),
		HaveKeyWithValue("pruned", BeNumerically("==", 1)),
		HaveKeyWithValue("objects", ConsistOf("ConfigMap "+tgt.Namespace+"/b")))))

	td, err := engine.Teardown(ctx, tgt, res.Inventory, TeardownOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(td.Inventory).To(BeEmpty())
	g.Expect(logged.take()).To(ConsistOf(And(
		HaveKeyWithValue("msg", "Tore down"), HaveKeyWithValue("objects", BeNumerically("==", 1)),
		Not(HaveKey("left")))))
}
