package synccontroller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAPIVersionsOfOneClusterAreReadOnceByPackagesThatMissTogether(t *testing.T) {
	g := NewWithT(t)
	var memo apiVersionsMemo
	var reads atomic.Int32
	release := make(chan struct{})
	read := func(context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
		reads.Add(1)
		<-release
		return []*metav1.APIGroup{{Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "example.dev/v1"}}}}, nil, nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			versions, err := memo.get(context.Background(), "hcp-a", read)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(versions.List()).To(Equal([]string{"example.dev/v1"}))
		})
	}
	g.Eventually(reads.Load, time.Second, time.Millisecond).To(BeEquivalentTo(1))
	time.Sleep(50 * time.Millisecond) // the other Packages are waiting on the read under way
	close(release)
	wg.Wait()
	g.Expect(reads.Load()).To(BeEquivalentTo(1), "one discovery read for eight Packages of one cluster")
}

func TestAClusterServingTooManyAPIVersionsGetsAClearError(t *testing.T) {
	g := NewWithT(t)
	list := &metav1.APIResourceList{GroupVersion: "tenant.example.dev/v1"}
	for i := range maxAPIVersions {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: fmt.Sprintf("kind%ds", i), Kind: fmt.Sprintf("Kind%d", i)})
	}
	var memo apiVersionsMemo
	_, err := memo.get(context.Background(), "hcp-hostile", func(context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
		return []*metav1.APIGroup{{Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "tenant.example.dev/v1"}}}},
			[]*metav1.APIResourceList{list}, nil
	})
	g.Expect(err).To(MatchError(ContainSubstring("serves 20001 API versions and kinds, more than the 20000 a chart is given")))
}

// The Package whose pass started a shared discovery read may end (its context cancelled);
// the others waiting on that read still get its answer, and it returns at once.
func TestACancelledCallerFailsNoneOfTheSharedDiscoveryRead(t *testing.T) {
	g := NewWithT(t)
	var memo apiVersionsMemo
	started, release := make(chan struct{}), make(chan struct{})
	read := func(ctx context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
		close(started)
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-release:
		}
		return []*metav1.APIGroup{{Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "example.dev/v1"}}}}, nil, nil
	}
	first, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, err := memo.get(first, "hcp-a", read)
		firstErr <- err
	}()
	<-started
	other := make(chan error, 1)
	go func() {
		versions, err := memo.get(context.Background(), "hcp-a", read)
		if err == nil && len(versions.List()) != 1 {
			err = fmt.Errorf("got %v", versions.List())
		}
		other <- err
	}()
	time.Sleep(50 * time.Millisecond) // the other Package waits on the read under way
	cancel()
	g.Eventually(firstErr).Should(Receive(MatchError(context.Canceled)), "the cancelled caller returns at once")
	time.Sleep(50 * time.Millisecond)
	close(release)
	g.Eventually(other).Should(Receive(BeNil()), "the read goes on for the others")
}
