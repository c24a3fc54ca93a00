package helmrepo

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/convoy-gitops/convoy/manifests"
)

// testChart is a real chart of the repository's test data.
const testChart = "../../manifests/testdata/charts/metrics-server/chart"

// repository is a Helm chart repository served by a plain file server: the chart packaged as
// helm package does and indexed as helm repo index does.
type repository struct {
	url     string
	digest  string
	version string
	// archives counts the downloads of packaged charts.
	archives atomic.Int64
}

// newRepository serves testChart from a file server.
func newRepository(t *testing.T) *repository {
	t.Helper()
	dir := t.TempDir()
	ch, err := loader.LoadDir(testChart)
	if err != nil {
		t.Fatal(err)
	}
	archive, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &repository{version: ch.Metadata.Version}
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	r.digest = Digest(data)
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.StripPrefix("/charts", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, ".tgz") {
			r.archives.Add(1)
		}
		files.ServeHTTP(w, req)
	})))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/charts"
	idx, err := repo.IndexDirectory(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

// pullPackage is a package pulling the repository's chart at digest.
func pullPackage(r *repository, digest string) fstest.MapFS {
	return fstest.MapFS{"manifest.yaml": {Data: []byte(`apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: metrics-server}
spec:
  chart:
    repository: ` + r.url + `
    name: metrics-server
    version: "` + r.version + `"
    digest: ` + digest + `
`)}}
}

func TestPulledChartRendersOncePerDigest(t *testing.T) {
	g := NewWithT(t)
	r := newRepository(t)
	f := New(Options{})
	data := manifests.TemplateData{Package: manifests.PackageRef{Name: "m", Namespace: "addons"}, Charts: f,
		Environment: &manifests.Environment{Kubernetes: manifests.KubernetesEnvironment{Version: "v1.33.0"}}}
	for range 3 {
		rendered, err := manifests.Load(pullPackage(r, r.digest), ".", data)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rendered.Phases).To(HaveLen(4))
		g.Expect(rendered.Phases[3].Objects).NotTo(BeEmpty())
	}
	g.Expect(r.archives.Load()).To(BeEquivalentTo(1))
}

func TestPulledChartWithWrongDigestIsRefused(t *testing.T) {
	g := NewWithT(t)
	r := newRepository(t)
	wrong := "sha256:" + strings.Repeat("0", 64)
	_, err := manifests.Load(pullPackage(r, wrong), ".", manifests.TemplateData{Charts: New(Options{})})
	var errs manifests.Errors
	g.Expect(errors.As(err, &errs)).To(BeTrue(), "%v", err)
	g.Expect(errs[0].Rule).To(Equal(manifests.RuleChartDigest))
	g.Expect(errs[0].Message).To(ContainSubstring("has digest " + r.digest + ", not the pinned " + wrong))
}

func TestPulledChartFetchFailuresAreRetried(t *testing.T) {
	g := NewWithT(t)
	r := newRepository(t)
	ref := manifests.ChartRef{Repository: r.url, Name: "metrics-server", Version: "0.0.0-missing", Digest: r.digest}
	_, err := New(Options{}).FetchChart(ref)
	g.Expect(err).To(MatchError(ContainSubstring("no chart metrics-server version 0.0.0-missing")))

	ref.Version = r.version
	_, err = New(Options{MaxChartSize: 100}).FetchChart(ref)
	g.Expect(err).To(MatchError(ContainSubstring("larger than 100 bytes")))

	// A fetch failure is no verdict on the package: Load fails with a plain error, which the
	// render cache does not keep.
	_, err = manifests.Load(pullPackage(r, r.digest), ".", manifests.TemplateData{Charts: New(Options{MaxChartSize: 100})})
	var errs manifests.Errors
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.As(err, &errs)).To(BeFalse())
}

func TestFetchIsBoundedByTheSourceTimeout(t *testing.T) {
	g := NewWithT(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	ref := manifests.ChartRef{Repository: srv.URL, Name: "x", Version: "1.0.0", Digest: "sha256:" + strings.Repeat("1", 64)}
	start := time.Now()
	_, err := New(Options{}).WithTimeout(200 * time.Millisecond).FetchChart(ref)
	g.Expect(err).To(MatchError(ContainSubstring("context deadline exceeded")))
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
}
