package rollout

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// benchWorld returns a fleet of n HostedClusters in the middle of a rollout of rev2 over rev1
// with maxUnavailable "10%": early is done, normal is updating, late and the unlabelled quarter
// are still on rev1, one in a hundred HostedClusters is unavailable, and the template carries a
// config.
func benchWorld(n int) *world {
	w := newWorld()
	w.hcpkg.Spec.Strategy = rolling(intstr.FromString("10%"))
	config := &runtime.RawExtension{Raw: []byte(`{"replicas":2,"image":{"tag":"v1.2.3"},"resources":{"cpu":"100m"}}`)}
	for _, i := range []int{1, 2} {
		w.history[i-1].Template.Config = config
	}
	w.update.Template.Config, w.current.Template.Config = config, config
	groups := []string{"early", "normal", "late", ""}
	for i := range n {
		group := groups[i%len(groups)]
		name := fmt.Sprintf("hc-%05d", i)
		w.cluster(name, group).Available = i%100 != 7
		switch {
		case group == "early", group == "normal" && i%3 == 0:
			w.pkg(name, w.update, t0.Add(-time.Hour))
		case group == "normal" && i%3 == 1:
			setSpec(w.pkg(name, *w.current, t0.Add(-time.Hour)), w.update, t0.Add(-time.Minute))
		default:
			w.pkg(name, *w.current, t0.Add(-time.Hour))
		}
	}
	return w
}

func TestBenchWorldIsMidRollout(t *testing.T) {
	g := NewWithT(t)
	plan := compute(g, benchWorld(400))
	g.Expect(states(plan)).To(Equal([]string{"early=Done", "normal=Progressing", "late=Pending", "unknown=Pending"}))
	g.Expect(plan.Updates).NotTo(BeEmpty())
}

// BenchmarkCompute10000 measures one planner pass over 10,000 HostedClusters.
func BenchmarkCompute10000(b *testing.B) {
	in := benchWorld(10000).input()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compute(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkComputeWithMemo10000 measures the same pass with a Memo the previous pass filled,
// after one Package in a hundred changed: what a HostedClusterPackage pass plans during a rollout.
func BenchmarkComputeWithMemo10000(b *testing.B) {
	in := benchWorld(10000).input()
	for i := range in.Packages {
		in.Packages[i].UID = types.UID(fmt.Sprintf("uid-%d", i))
		in.Packages[i].ResourceVersion = "1"
	}
	in.Memo = &Memo{}
	if _, err := Compute(in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	pass := 1
	for b.Loop() {
		pass++
		for i := pass % 100; i < len(in.Packages); i += 100 {
			in.Packages[i].ResourceVersion = strconv.Itoa(pass)
		}
		if _, err := Compute(in); err != nil {
			b.Fatal(err)
		}
	}
}
