package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	eventv1 "github.com/fluxcd/pkg/apis/event/v1beta1"
	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/cmd/convoy-dev/devdemo"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// eventReceiver is a local notification endpoint that keeps every body it is sent.
type eventReceiver struct {
	mu     sync.Mutex
	bodies []string
}

func (r *eventReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "want a JSON POST", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.bodies = append(r.bodies, string(raw))
	r.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

func (r *eventReceiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...)
}

func TestControllerPostsRolloutEventsInFluxFormat(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	receiver := &eventReceiver{}
	srv := httptest.NewServer(receiver)
	defer srv.Close()

	opts := devdemo.Options{Clusters: 6, Kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), ExitAfterRollout: true,
		RunController: inProcessController(func(o *controllerOptions) { o.eventsAddr = srv.URL + "/events" }),
		Approve:       inProcessApprove}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out fleet.SyncBuffer
	g.Expect(devdemo.Run(ctx, &out, opts)).To(Succeed())
	committed := regexp.MustCompile(`Committed ([0-9a-f]{12}) to main`).FindStringSubmatch(out.String())
	g.Expect(committed).To(HaveLen(2), out.String())

	var partitionsDone []string
	completed := 0
	for _, body := range receiver.received() {
		// No Secret travels: only object references, reasons and messages.
		g.Expect(body).NotTo(Or(ContainSubstring("client-key-data"), ContainSubstring("BEGIN"), ContainSubstring(`"Secret"`)))
		var e eventv1.Event
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		g.Expect(dec.Decode(&e)).To(Succeed(), body)
		g.Expect(e.Severity).To(BeElementOf(eventv1.EventSeverityInfo, eventv1.EventSeverityError))
		g.Expect(e.ReportingController).To(HavePrefix("convoy-"))
		g.Expect(e.InvolvedObject.APIVersion).To(Equal("convoy.dev/v1alpha1"), body)
		if e.InvolvedObject.Kind != "HostedClusterPackage" || !strings.HasPrefix(e.Metadata["revision"], committed[1]) {
			continue
		}
		g.Expect(e.Metadata["revision"]).To(MatchRegexp(`^[0-9a-f]{40}$`))
		switch e.Reason {
		case "PartitionCompleted":
			partitionsDone = append(partitionsDone, strings.Fields(e.Message)[1])
		case "RolloutCompleted":
			completed++
		}
	}
	g.Expect(partitionsDone).To(ConsistOf("early", "normal", "late"), "one event per partition done")
	g.Expect(completed).To(Equal(1), "one event for the completed rollout")
}
