package fleetview

// This file adds a kind of rollout check that convoy does not ship, "tcp" (the partition passes
// while a TCP address accepts connections), to show that a kind is one file: it registers
// itself in rollout/checks's table, and the table alone makes the controller evaluate it, the
// planner name it in a failure and `convoy plan` forecast it. No other file knows of it.
//
// A shipped kind's Field returns its field of RolloutCheck (Prometheus, Alerts, HTTP), which
// the API type and its docs gain along with the kind's file. A test cannot add a field to the
// API type, so this kind's field stands beside it, found by the check's name (tcpFields).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/checks"
)

// tcpField is the tcp kind's field: what the API type would hold as RolloutCheck.TCP.
type tcpField struct {
	// Address is host:port.
	Address string `json:"address"`
}

// tcpFields holds the tcp field of each check of the kind, by check name (*tcpField).
var tcpFields sync.Map

func init() {
	checks.Register(checks.Kind[tcpField]{
		Name: "tcp",
		Field: func(c *convoyv1alpha1.RolloutCheck) *tcpField {
			f, _ := tcpFields.Load(c.Name)
			field, _ := f.(*tcpField)
			return field
		},
		Spec:    func(f *tcpField) checks.Spec { return &tcpSpec{address: f.Address} },
		Subject: func(f *tcpField) string { return "connect to " + f.Address },
	})
}

// tcpSpec is the tcp kind's plain spec.
type tcpSpec struct{ address string }

// Compile refuses an address that is not host:port.
func (s *tcpSpec) Compile() (checks.Evaluator, error) {
	if _, _, err := net.SplitHostPort(s.address); err != nil {
		return nil, &checks.SpecError{Field: "tcp.address", Rule: "must be host:port", Err: err}
	}
	return &tcpEvaluator{address: s.address}, nil
}

// tcpEvaluator is a compiled tcp check.
type tcpEvaluator struct{ address string }

// Evaluate connects: a connection passes, a refusal fails, anything else is inconclusive.
func (e *tcpEvaluator) Evaluate(ctx context.Context, _ checks.Input) (checks.Evaluation, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", e.address)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return checks.Evaluation{Outcome: checks.Failure, Value: "refused", Message: e.address + " refused the connection"}, nil
	case err != nil:
		return checks.Evaluation{Outcome: checks.Inconclusive, Message: fmt.Sprintf("connecting to %s: %v", e.address, err)}, nil
	}
	_ = conn.Close()
	return checks.Evaluation{Outcome: checks.Success, Value: "accepted", Message: e.address + " accepted a connection"}, nil
}

// Describe names the address.
func (e *tcpEvaluator) Describe() string { return "connect to " + e.address }

// Timeout bounds a connection.
func (e *tcpEvaluator) Timeout() time.Duration { return 2 * time.Second }

// tcpCheck is a check of the tcp kind on address, named name, that lasts duration.
func tcpCheck(name, address string, duration time.Duration) convoyv1alpha1.RolloutCheck {
	tcpFields.Store(name, &tcpField{Address: address})
	return convoyv1alpha1.RolloutCheck{Name: name, DurationSeconds: int32(duration / time.Second)}
}

func TestANewCheckKindIsOneFile(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	address := ln.Addr().String()
	check := tcpCheck("db-port", address, 15*time.Minute)

	t.Run("registered", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(checks.Kinds()).To(Equal([]string{"prometheus", "alerts", "http", "tcp"}))
		g.Expect(checks.KindOf(&check)).To(Equal("tcp"))
		g.Expect(checks.Subject(&check)).To(Equal("connect to " + address))
		g.Expect(checks.SecretRef(&check)).To(BeNil(), "the kind takes no credentials")
		g.Expect(checks.Key(&check)).To(Equal(`tcp:{"address":"` + address + `"};`))
		bad := tcpCheck("db-port-bad", "no port", 0)
		_, err := checks.CompileRolloutCheck(&bad)
		g.Expect(err).To(MatchError(ContainSubstring("tcp.address must be host:port")))
	})

	t.Run("evaluated", func(t *testing.T) {
		g := NewWithT(t)
		compiled, err := checks.CompileRolloutCheck(&check)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(compiled.Describe()).To(Equal("connect to " + address))
		ctx, cancel := context.WithTimeout(context.Background(), compiled.Timeout())
		defer cancel()
		ev, err := compiled.Evaluate(ctx, checks.Input{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev).To(Equal(checks.Evaluation{Outcome: checks.Success, Value: "accepted", Message: address + " accepted a connection"}))
		g.Expect(ln.Close()).To(Succeed())
		ev, err = compiled.Evaluate(ctx, checks.Input{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Outcome).To(Equal(checks.Failure), ev.Message)
	})

	t.Run("forecast", func(t *testing.T) {
		g := NewWithT(t)
		f := forecastOf(t, gatedSnapshot(func(s *convoyv1alpha1.HostedClusterPackageSpec) {
			s.Checks = []convoyv1alpha1.RolloutCheck{check}
		}))
		g.Expect(f.Blocked).To(BeEmpty())
		early, normal := partitionOf(g, f, "early"), partitionOf(g, f, "normal")
		g.Expect(early.Checks).To(ConsistOf(HaveField("Kind", "tcp")))
		g.Expect(normal.Waits).To(ConsistOf(HaveField("Type", convoyv1alpha1.GateCheck)))
		g.Expect(normal.Start.Time).To(BeTemporally(">=", gatedNow.Add(15*time.Minute)), "the check of early lasts 15m")
		g.Expect(early.Checks[0].Passes.Time).To(Equal(normal.Start.Time))
	})

	t.Run("named in a failure", func(t *testing.T) {
		g := NewWithT(t)
		snap := gatedSnapshot(func(s *convoyv1alpha1.HostedClusterPackageSpec) {
			s.Checks = []convoyv1alpha1.RolloutCheck{check}
		})
		for i := range 2 {
			snap.Packages[i] = progressedPackage("addon", snap.HostedClusters[i].Name, snap.Revisions["addon-2"], gatedNow.Add(-10*time.Minute))
		}
		evaluated := metav1.NewTime(gatedNow.Add(-5 * time.Minute))
		snap.HostedClusterPackage.Status.Partitions = []convoyv1alpha1.PartitionStatus{{Name: "early", State: convoyv1alpha1.PartitionDone,
			Checks: []convoyv1alpha1.CheckStatus{{Name: "db-port", Revision: "addon-2", State: convoyv1alpha1.CheckFailed,
				Failures: 1, LastValue: "refused", LastEvaluated: &evaluated}}}}
		f := forecastOf(t, snap)
		g.Expect(f.Blocked).To(ContainSubstring(`Check db-port of partition early failed (1 failed evaluations, failureLimit 0): connect to ` +
			address + ` saw "refused"`))
	})
}
