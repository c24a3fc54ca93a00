package helmrepo

import (
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-containerregistry/pkg/registry"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	helmregistry "helm.sh/helm/v4/pkg/registry"

	"github.com/convoy-gitops/convoy/manifests"
)

// newOCIRegistry starts an OCI registry (go-containerregistry's, in memory) and pushes
// testChart into it with the Helm SDK's registry client, as helm push does. It returns the
// repository as a manifest names it and the chart's version and digest.
func newOCIRegistry(t *testing.T) (repository, version, digest string) {
	t.Helper()
	g := NewWithT(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ch, err := loader.LoadDir(testChart)
	g.Expect(err).NotTo(HaveOccurred())
	archive, err := chartutil.Save(ch, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(archive)
	g.Expect(err).NotTo(HaveOccurred())
	client, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP())
	g.Expect(err).NotTo(HaveOccurred())
	host := strings.TrimPrefix(srv.URL, "http://")
	_, err = client.Push(data, host+"/charts/"+ch.Metadata.Name+":"+ch.Metadata.Version)
	g.Expect(err).NotTo(HaveOccurred())
	return OCIScheme + host + "/charts", ch.Metadata.Version, Digest(data)
}

// ociPackage is a package pulling metrics-server from an OCI repository at digest.
func ociPackage(repository, version, digest string) fstest.MapFS {
	return fstest.MapFS{"manifest.yaml": {Data: []byte(`apiVersion: convoy.dev/v1alpha1
kind: PackageManifest
metadata: {name: metrics-server}
spec:
  chart:
    repository: ` + repository + `
    name: metrics-server
    version: "` + version + `"
    digest: ` + digest + `
`)}}
}

func TestChartPulledFromAnOCIRegistry(t *testing.T) {
	g := NewWithT(t)
	repository, version, digest := newOCIRegistry(t)
	f := New(Options{})
	data := manifests.TemplateData{Package: manifests.PackageRef{Name: "m", Namespace: "addons"}, Charts: f,
		Environment: &manifests.Environment{Kubernetes: manifests.KubernetesEnvironment{Version: "v1.33.0"}}}
	r, err := manifests.Load(ociPackage(repository, version, digest), ".", data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Phases[3].Objects).NotTo(BeEmpty())

	wrong := "sha256:" + strings.Repeat("2", 64)
	_, err = manifests.Load(ociPackage(repository, version, wrong), ".", data)
	var errs manifests.Errors
	g.Expect(errors.As(err, &errs)).To(BeTrue(), "%v", err)
	g.Expect(errs[0].Rule).To(Equal(manifests.RuleChartDigest))
	g.Expect(errs[0].Message).To(ContainSubstring("has digest " + digest + ", not the pinned " + wrong))

	_, err = f.FetchChart(manifests.ChartRef{Repository: repository, Name: "metrics-server", Version: "0.0.1", Digest: digest})
	g.Expect(err).To(MatchError(ContainSubstring("metrics-server:0.0.1")))
}
