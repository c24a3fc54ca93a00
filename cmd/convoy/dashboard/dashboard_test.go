package dashboard

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// env is the suite's management cluster; web serves the dashboard over it.
var (
	env  *fleet.Fleet
	web  *httptest.Server
	dash *Server
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	fleet.Main(m, &env, fleet.Options{}, func(ctx context.Context, f *fleet.Fleet) (func(), error) {
		ctx, cancel := context.WithCancel(ctx)
		srv, err := New(f.Config, Options{Coalesce: 50 * time.Millisecond})
		if err == nil {
			err = srv.Start(ctx)
		}
		if err != nil {
			cancel()
			return nil, err
		}
		dash, web = srv, httptest.NewServer(srv.Handler())
		return func() { web.Close(); cancel() }, nil
	})
}

// seed creates fx in the suite's fleet.
func seed(t *testing.T, fx fixtureRollout) {
	t.Helper()
	env.Require(t)
	if err := fx.seed(context.Background(), env.Fleet); err != nil {
		t.Fatalf("seeding %s: %v", fx.name, err)
	}
}

// get fetches path from the dashboard and returns its body.
func get(g Gomega, path string) string {
	resp, err := http.Get(web.URL + path)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "GET %s: %s", path, body)
	return string(body)
}

// rolloutOf reads the rollout view of name, once the cache has the fixture's status.
func rolloutOf(g Gomega, query string) *RolloutView {
	v := &RolloutView{}
	g.Eventually(func(g Gomega) {
		g.Expect(json.Unmarshal([]byte(get(g, "/api/view?view=rollout&"+query)), v)).To(Succeed())
		g.Expect(v.UpdateRevision).NotTo(BeNil())
		g.Expect(v.Packages.Total).NotTo(BeZero())
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	return v
}

// statesOf lists the states of a row's cells.
func statesOf(row GridRow) []string {
	var out []string
	for _, c := range row.Cells {
		out = append(out, c.State)
	}
	return out
}

func TestRolloutViewLaysOutPartitionsByState(t *testing.T) {
	g := NewWithT(t)
	fx := fixtureRollout{name: "grid", prefix: "grid", n: 9}
	seed(t, fx)
	v := rolloutOf(g, "name=grid")

	g.Expect(v.Grid).To(HaveLen(3))
	g.Expect(v.Grid[0].Partition).To(Equal("early"))
	g.Expect(statesOf(v.Grid[0])).To(Equal([]string{StateProgressed, StateProgressed, StateProgressed}))
	g.Expect(statesOf(v.Grid[1])).To(Equal([]string{StateFailed, StateUpdating, StateWaiting}))
	g.Expect(statesOf(v.Grid[2])).To(Equal([]string{StateWaiting, StateWaiting, StateSkipped}))
	failed := v.Grid[1].Cells[0]
	g.Expect(failed.HostedCluster).To(Equal("clusters/grid-0003"))
	g.Expect(failed.Message).To(ContainSubstring("has not progressed"))
	g.Expect(failed.Package).To(Equal("clusters-grid-0003/grid"))
	g.Expect(v.Grid[2].Cells[2].Reason).To(Equal("HostedClusterNotAvailable"))
	g.Expect(v.Grid[1].Counts).To(Equal(map[string]int{StateFailed: 1, StateUpdating: 1, StateWaiting: 1}))

	g.Expect(v.Budget).To(Equal(Budget{InUse: 2, Max: 2}))
	g.Expect(v.Stalled).To(BeTrue())
	g.Expect(v.Failures).To(ConsistOf(HaveField("HostedCluster", "clusters/grid-0003")))

	g.Expect(v.Timeline).To(HaveLen(3))
	early, normal := v.Timeline[0], v.Timeline[1]
	g.Expect(early.Start).NotTo(BeNil())
	g.Expect(early.End).NotTo(BeNil())
	g.Expect(early.End.After(*early.Start)).To(BeTrue())
	g.Expect(normal.Start).NotTo(BeNil())
	g.Expect(normal.End).To(BeNil(), "normal is still rolling out")
	g.Expect(v.Timeline[2].Start).To(BeNil())
}

func TestRolloutViewPagesAndFiltersTheGrid(t *testing.T) {
	g := NewWithT(t)
	seed(t, fixtureRollout{name: "pages", prefix: "pages", n: 30})
	v := rolloutOf(g, "name=pages&limit=4&offset=4")
	g.Expect(v.Grid[0].Total).To(Equal(10))
	g.Expect(v.Grid[0].Cells).To(HaveLen(4))
	g.Expect(v.Grid[0].Cells[0].HostedCluster).To(Equal("clusters/pages-0004"))

	v = rolloutOf(g, "name=pages&state=failed")
	g.Expect(v.Grid[0].Cells).To(BeEmpty())
	g.Expect(v.Grid[1].Matching).To(Equal(1))
	g.Expect(statesOf(v.Grid[1])).To(Equal([]string{StateFailed}))
	g.Expect(v.Grid[1].Counts[StateWaiting]).To(Equal(8), "counts cover every cell, not only the page")

	resp, err := http.Get(web.URL + "/api/view?view=rollout&name=pages&state=purple")
	g.Expect(err).NotTo(HaveOccurred())
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
	g.Expect(string(body)).To(ContainSubstring(`unknown state "purple"`))
}

func TestFleetViewNamesTheFailedClusters(t *testing.T) {
	g := NewWithT(t)
	seed(t, fixtureRollout{name: "fleet", prefix: "fleet", n: 6})
	g.Eventually(func(g Gomega) {
		v := &FleetView{}
		g.Expect(json.Unmarshal([]byte(get(g, "/api/view?view=fleet")), v)).To(Succeed())
		var item *FleetItem
		for i := range v.Items {
			if v.Items[i].Name == "fleet" {
				item = &v.Items[i]
			}
		}
		g.Expect(item).NotTo(BeNil())
		g.Expect(item.Stalled).To(BeTrue())
		g.Expect(item.Failures).To(ConsistOf(HaveField("HostedCluster", "clusters/fleet-0002")))
		g.Expect(item.UpdateRevision.Commit).To(Equal(fixtureCommitB))
		g.Expect(item.Partitions).To(HaveLen(3))
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
}

func TestPackageViewShowsPhasesObjectsErrorAndEvents(t *testing.T) {
	g := NewWithT(t)
	seed(t, fixtureRollout{name: "pkgview", prefix: "pkgview", n: 6})
	ns := "clusters-pkgview-0002"
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pkgview.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Package", Namespace: ns, Name: "pkgview", APIVersion: convoyv1alpha1.GroupVersion.String()},
		Type:           corev1.EventTypeWarning, Reason: "ProbeFailed", Message: "deploy is not available", LastTimestamp: metav1.Now()}
	g.Expect(env.Client.Create(context.Background(), ev)).To(Succeed())

	g.Eventually(func(g Gomega) {
		v := &PackageView{}
		g.Expect(json.Unmarshal([]byte(get(g, "/api/view?view=package&namespace="+ns+"&name=pkgview")), v)).To(Succeed())
		g.Expect(v.Owner).To(Equal("pkgview"))
		g.Expect(v.LastError).To(ContainSubstring("0/1 replicas available"))
		g.Expect(v.Phases).To(HaveLen(2))
		g.Expect(v.Phases[0]).To(And(HaveField("Name", "rbac"), HaveField("Target", "management"), HaveField("Available", true)))
		g.Expect(v.Phases[1]).To(And(HaveField("Name", "deploy"), HaveField("Target", "hosted"), HaveField("Available", false)))
		g.Expect(v.Phases[1].Objects).To(ConsistOf(ObjectView{Kind: "Deployment", Namespace: "kube-system", Name: "extra-component", Target: "hosted"}))
		g.Expect(v.Events).To(ConsistOf(HaveField("Message", "deploy is not available")))
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())

	resp, err := http.Get(web.URL + "/api/view?view=package&namespace=" + ns + "&name=nothing")
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
}

func TestStreamPushesEachChangeWithoutReload(t *testing.T) {
	g := NewWithT(t)
	seed(t, fixtureRollout{name: "stream", prefix: "stream", n: 6})
	rolloutOf(g, "name=stream")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := openStream(ctx, g, "/api/stream?view=rollout&name=stream")
	first := &RolloutView{}
	g.Expect(json.Unmarshal([]byte(<-events), first)).To(Succeed())
	g.Expect(first.Grid[1].Cells[1].State).To(Equal(StateUpdating))

	pkg := &convoyv1alpha1.Package{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: "clusters-stream-0003", Name: "stream"}, pkg)).To(Succeed())
	pkg.Status = packageStatus(pkg.Generation, fixtureCommitB, true, time.Now())
	g.Expect(env.Client.Status().Update(ctx, pkg)).To(Succeed())

	g.Eventually(func() string {
		v := &RolloutView{}
		if err := json.Unmarshal([]byte(<-events), v); err != nil {
			return err.Error()
		}
		return v.Grid[1].Cells[1].State
	}, 20*time.Second).Should(Equal(StateProgressed))
}

// openStream reads the server-sent events of path, one data payload per receive.
func openStream(ctx context.Context, g Gomega, path string) <-chan string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, web.URL+path, nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("text/event-stream"))
	out := make(chan string, 16)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				out <- data
			}
		}
	}()
	return out
}

func TestNoSecretDataReachesTheBrowser(t *testing.T) {
	g := NewWithT(t)
	seed(t, fixtureRollout{name: "secret", prefix: "secret", n: 6})
	rolloutOf(g, "name=secret")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	forbidden := []string{fixtureSecretVal, base64.StdEncoding.EncodeToString([]byte(fixtureSecretVal))}
	var seen []string
	for _, path := range []string{"/", "/static/app.js", "/static/app.css", "/api/view?view=fleet", "/api/view?view=rollout&name=secret",
		"/api/view?view=rollout&name=secret&state=failed", "/api/view?view=package&namespace=clusters-secret-0002&name=secret"} {
		seen = append(seen, get(g, path))
	}
	for _, path := range []string{"/api/stream?view=fleet", "/api/stream?view=rollout&name=secret",
		"/api/stream?view=package&namespace=clusters-secret-0000&name=secret"} {
		seen = append(seen, <-openStream(ctx, g, path))
	}
	for _, body := range seen {
		for _, f := range forbidden {
			g.Expect(body).NotTo(ContainSubstring(f))
		}
	}
	g.Expect(strings.Join(seen, "")).To(ContainSubstring("clusters/secret-0002"), "the views were read")
}

func TestEveryRouteIsReadOnly(t *testing.T) {
	g := NewWithT(t)
	env.Require(t)
	for _, path := range []string{"/", "/api/view?view=fleet", "/api/stream?view=fleet"} {
		resp, err := http.Post(web.URL+path, "application/json", strings.NewReader("{}"))
		g.Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed), path)
	}
}

func TestLoopbackHostsRefusesOtherHostNames(t *testing.T) {
	g := NewWithT(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	h := LoopbackHosts(ok)
	for host, want := range map[string]int{"127.0.0.1:8080": 200, "localhost:8080": 200, "[::1]:8080": 200, "127.0.0.1": 200,
		"evil.example.com:8080": 403, "10.0.0.1:8080": 403, "": 403} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		g.Expect(rec.Code).To(Equal(want), "host %q", host)
	}
}
