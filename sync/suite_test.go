package sync

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/test/fleet"
)

// env is the simulated management cluster shared by the package's tests; blue is a hosted
// cluster that stays up for the whole run. Tests that stop or delete a hosted cluster add
// their own.
var (
	env  *fleet.Fleet
	blue *fleet.HostedCluster
)

func TestMain(m *testing.M) {
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	code, err := runSuite(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func runSuite(m *testing.M) (int, error) {
	ctx := context.Background()
	var err error
	env, err = fleet.Start(ctx, fleet.Options{})
	if err != nil {
		return 1, err
	}
	defer func() { _ = env.Stop() }()
	blue, err = env.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "blue"})
	if err != nil {
		return 1, err
	}
	stop, err := startManager(ctx)
	if err != nil {
		return 1, err
	}
	defer stop()
	return m.Run(), nil
}

// newNamespace creates a namespace with a generated name through c and returns its name.
func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	g.Expect(c.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}
