package fleet

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Setup prepares a package's suite once the fleet is up (hosted clusters, a manager...); the
// function it returns, if any, runs after the tests, before the fleet stops.
type Setup func(ctx context.Context, f *Fleet) (teardown func(), err error)

// Main is a TestMain body: it starts a fleet with opts, stores it in *env, runs setup and the
// tests, then tears down and stops every API server, and exits with the tests' code. A fleet or
// setup failure exits 1 with the error on stderr.
//
// Under go test -short, Main starts nothing and leaves *env nil: the tests that need the fleet
// skip themselves (Fleet.Require, Fleet.NewNamespace). It is the one place that reads -short.
func Main(m *testing.M, env **Fleet, opts Options, setup Setup) {
	code, err := runMain(m, env, opts, setup)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func runMain(m *testing.M, env **Fleet, opts Options, setup Setup) (int, error) {
	flag.Parse()
	if testing.Short() {
		return m.Run(), nil
	}
	ctx := context.Background()
	f, err := Start(ctx, opts)
	if err != nil {
		return 1, err
	}
	defer func() { _ = f.Stop() }()
	*env = f
	if setup != nil {
		teardown, err := setup(ctx, f)
		if err != nil {
			return 1, err
		}
		if teardown != nil {
			defer teardown()
		}
	}
	return m.Run(), nil
}

// NewNamespace creates a namespace with a generated name on the management cluster, for one
// test, and returns its name.
func (f *Fleet) NewNamespace(t testing.TB) string {
	t.Helper()
	f.Require(t)
	return NewNamespaceIn(t, f.Client)
}

// NewNamespaceIn creates a namespace with a generated name through c (the management cluster
// or a hosted one), for one test, and returns its name.
func NewNamespaceIn(t testing.TB, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a test namespace: %v", err)
	}
	return ns.Name
}

// RunManager starts mgr in the background for a suite's Setup and returns the teardown that
// stops it, waits until it has returned, then removes dir (its storage; "" for none).
func RunManager(ctx context.Context, mgr manager.Manager, dir string) (teardown func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	return func() {
		cancel()
		<-done
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
}

// NameSuffix returns a random DNS-label suffix, for cluster-scoped names shared by tests.
func NameSuffix() string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 6)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}
