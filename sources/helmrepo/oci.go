package helmrepo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/convoy-gitops/convoy/manifests"
)

// OCIScheme prefixes a chart repository that is an OCI registry, as Helm writes it
// (oci://registry.example.com/charts); the chart is NAME:VERSION below it.
const OCIScheme = "oci://"

// Media types of a Helm chart's archive in an OCI manifest: Helm's, and the one older Helm
// versions pushed.
const (
	chartLayerMediaType       = types.MediaType("application/vnd.cncf.helm.chart.content.v1.tar+gzip")
	legacyChartLayerMediaType = types.MediaType("application/tar+gzip")
)

// downloadOCI pulls ref's chart from an OCI registry: the manifest of NAME:VERSION (a "+" in
// the version is "_" in the tag, as Helm pushes it), then its chart layer, which is the packaged
// chart whose digest the manifest pins. Registries are read anonymously.
func (f *Fetcher) downloadOCI(ctx context.Context, ref manifests.ChartRef) ([]byte, error) {
	repo := strings.TrimSuffix(strings.TrimPrefix(ref.Repository, OCIScheme), "/")
	tag := strings.ReplaceAll(ref.Version, "+", "_")
	r, err := name.ParseReference(repo + "/" + ref.Name + ":" + tag)
	if err != nil {
		return nil, fmt.Errorf("repository %q: %w", ref.Repository, err)
	}
	transport := f.opts.Client.Transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	img, err := remote.Image(r, remote.WithContext(ctx), remote.WithTransport(transport))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r, err)
	}
	for _, l := range layers {
		mt, err := l.MediaType()
		if err != nil || (mt != chartLayerMediaType && mt != legacyChartLayerMediaType) {
			continue
		}
		if size, err := l.Size(); err == nil && size > f.opts.MaxChartSize {
			return nil, fmt.Errorf("%s: the chart is larger than %d bytes", r, f.opts.MaxChartSize)
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, fmt.Errorf("reading the chart of %s: %w", r, err)
		}
		defer func() { _ = rc.Close() }()
		return readLimited(rc, f.opts.MaxChartSize, r.String())
	}
	return nil, fmt.Errorf("%s holds no Helm chart (no layer of media type %s)", r, chartLayerMediaType)
}

// readLimited reads r, failing past max bytes.
func readLimited(r io.Reader, max int64, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", what, max)
	}
	return data, nil
}
