package rolloutcontroller

import (
	"context"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
)

// silentListener accepts connections and never answers; it is closed at the end of t.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	return "http://" + l.Addr().String()
}

// TestStartChecksNeverWaitsForAnEvaluation: a pass starts the due checks and returns while a
// server that never answers holds them; no more than CheckConcurrency run per
// HostedClusterPackage; the evaluation ends at its timeout, inconclusive, and is handed over
// once, stamped with the time of the pass that started it.
func TestStartChecksNeverWaitsForAnEvaluation(t *testing.T) {
	g := NewWithT(t)
	url := silentListener(t)
	timeout := int32(1)
	silent := convoyv1alpha1.RolloutCheck{Name: "silent", HTTP: &convoyv1alpha1.HTTPCheck{URL: url, TimeoutSeconds: timeout}}
	other := convoyv1alpha1.RolloutCheck{Name: "other", HTTP: &convoyv1alpha1.HTTPCheck{URL: url + "/other", TimeoutSeconds: timeout}}
	obj := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon", UID: "u1"}}
	obj.Spec.Checks = []convoyv1alpha1.RolloutCheck{silent, other}
	r := &HostedClusterPackageReconciler{CheckConcurrency: 1}
	compiled, err := r.compiledChecksOf(obj)
	g.Expect(err).NotTo(HaveOccurred())
	s := &scope{obj: obj, now: time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC)}
	due := []rollout.DueCheck{{HostedClusterPackage: "addon", Partition: "early", Revision: "addon-1", Check: silent},
		{HostedClusterPackage: "addon", Partition: "early", Revision: "addon-1", Check: other}}

	r.startChecks(context.Background(), s, compiled, due)
	run, ok := r.runs.take(checkRunKeyOf(obj, &due[0]))
	g.Expect(ok).To(BeTrue(), "the first check is under way")
	g.Expect(run.done).To(BeFalse(), "the pass did not wait for the silent server")
	_, ok = r.runs.take(checkRunKeyOf(obj, &due[1]))
	g.Expect(ok).To(BeFalse(), "CheckConcurrency 1 leaves the second check for a later pass")
	g.Expect(r.runs.underWay("addon")).To(Equal(1))

	g.Eventually(func() bool {
		run, _ = r.runs.take(checkRunKeyOf(obj, &due[0]))
		return run.done
	}, 10*time.Second, 50*time.Millisecond).Should(BeTrue())
	g.Expect(run.err).NotTo(HaveOccurred())
	g.Expect(run.eval.Outcome).To(Equal(rollout.CheckError))
	g.Expect(run.eval.At).To(Equal(s.now))
	_, ok = r.runs.take(checkRunKeyOf(obj, &due[0]))
	g.Expect(ok).To(BeFalse(), "a finished evaluation is handed over once")
}

// TestCheckRunsSweepAndForget: a finished evaluation that no due check records (its revision
// moved on) is dropped by the next pass; a deleted HostedClusterPackage's are all dropped.
func TestCheckRunsSweepAndForget(t *testing.T) {
	g := NewWithT(t)
	var runs checkRuns
	stale := checkRunKey{name: "addon", partition: "early", revision: "addon-1", check: "c"}
	current := checkRunKey{name: "addon", partition: "early", revision: "addon-2", check: "c"}
	other := checkRunKey{name: "other", partition: "early", revision: "other-1", check: "c"}
	done := make(chan struct{}, 3)
	for _, key := range []checkRunKey{stale, current, other} {
		runs.start(key, func() (rollout.Evaluation, error) {
			done <- struct{}{}
			return rollout.Evaluation{Outcome: rollout.CheckPass}, nil
		})
	}
	for range 3 {
		<-done
	}
	g.Eventually(func() int { return runs.underWay("addon") + runs.underWay("other") }).Should(BeZero())

	runs.sweep("addon", map[checkRunKey]bool{current: true})
	_, ok := runs.take(stale)
	g.Expect(ok).To(BeFalse(), "the stale evaluation is dropped")
	run, ok := runs.take(current)
	g.Expect(ok).To(BeTrue())
	g.Expect(run.eval.Outcome).To(Equal(rollout.CheckPass))

	runs.forget("other")
	_, ok = runs.take(other)
	g.Expect(ok).To(BeFalse())
}
