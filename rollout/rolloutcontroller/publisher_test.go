package rolloutcontroller

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/promotion"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

// switchableRemote is a PublishRemotes whose URL the test changes.
type switchableRemote struct {
	mu  sync.Mutex
	url string
}

func (r *switchableRemote) Remote(context.Context, sources.Key) (sources.Remote, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sources.Remote{URL: r.url}, nil
}

func (r *switchableRemote) set(url string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.url = url
}

// TestPublisherSaysWhenItsRecordCannotBePushed: a record whose repository cannot be reached
// gives its HostedClusterPackage one warning for the run of failures, and a normal event once
// a push succeeds again.
func TestPublisherSaysWhenItsRecordCannotBePushed(t *testing.T) {
	g := NewWithT(t)
	srv, err := gitserver.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(srv.Close)
	_, err = srv.CreateRepo("addons")
	g.Expect(err).NotTo(HaveOccurred())
	remote := &switchableRemote{url: "file://" + filepath.Join(t.TempDir(), "missing.git")}
	recorder := events.NewFakeRecorder(16)
	p := &Publisher{Identity: Identity{ManagementCluster: "mc-eu-1", Sector: "eu"}, Remotes: remote,
		Interval: 10 * time.Millisecond, Timeout: 5 * time.Second, Recorder: recorder}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = p.Start(ctx) }()

	owner := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon", UID: "uid-1"}}
	commit := "1f0e3c9a6b2d4e5f708192a3b4c5d6e7f8091a2b"
	p.Report(owner, sources.KeyFor("fleet", "addons"), "addon",
		promotion.CommitRecord{Commit: commit, State: promotion.Completed, Since: time.Now()})
	g.Eventually(recorder.Events).Should(Receive(HavePrefix("Warning PromotionNotPublished Could not push refs/convoy/promotion/eu/mc-eu-1/addon")))
	g.Consistently(recorder.Events, 300*time.Millisecond).ShouldNot(Receive(), "one warning for the run of failures")

	remote.set(srv.FileURL("addons"))
	g.Eventually(recorder.Events, 10*time.Second).Should(Receive(MatchRegexp(
		`^Normal PromotionPublished Pushed refs/convoy/promotion/eu/mc-eu-1/addon again after \d+ failures$`)))
}

// TestPublisherKeepsWhatWasReportedDuringAPush: states reported while a push is in flight, even
// past the pending bound, stay pending for the next push; only those the push carried leave.
func TestPublisherKeepsWhatWasReportedDuringAPush(t *testing.T) {
	g := NewWithT(t)
	p := &Publisher{Identity: Identity{ManagementCluster: "mc-eu-1", Sector: "eu"}, Remotes: &switchableRemote{}}
	owner := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon"}}
	source := sources.KeyFor("fleet", "addons")
	report := func(i int) {
		commit := fmt.Sprintf("%040x", i)
		p.Report(owner, source, "addon", promotion.CommitRecord{Commit: commit, State: promotion.Progressing,
			Since: time.Unix(int64(i), 0)})
	}
	for i := range 10 {
		report(i)
	}
	ref, snapshot, _ := p.due()
	g.Expect(snapshot.pending).To(HaveLen(10))
	for i := 10; i < 10+maxPending; i++ { // the push is slow: the pending bound drops the oldest
		report(i)
	}
	p.settle(context.Background(), ref, snapshot, promotion.Record{}, nil)
	left := p.entries[ref].pending
	g.Expect(left).To(HaveLen(maxPending), "none reported during the push is lost")
	g.Expect(left[len(left)-1].Commit).To(Equal(fmt.Sprintf("%040x", 9+maxPending)))

	p.Forget("addon")
	report(100)
	p.settle(context.Background(), ref, snapshot, promotion.Record{}, nil) // a push of the forgotten owner ends late
	g.Expect(p.entries[ref].pending).To(HaveLen(1))
	g.Expect(p.entries[ref].pushed).To(BeNil())
}
