package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Rules of pulled charts.
const (
	// RuleChartDigest: a pulled chart's archive does not have the digest the manifest pins.
	RuleChartDigest Rule = "chart-digest"
)

// ChartRef names a chart pulled from a Helm repository, pinned by version and digest.
type ChartRef struct {
	// Repository is the repository's URL.
	Repository string
	// Name and Version of the chart in the repository's index.
	Name    string
	Version string
	// Digest is "sha256:" and the hex SHA-256 of the packaged chart.
	Digest string
}

// String names the chart for messages.
func (r ChartRef) String() string {
	return fmt.Sprintf("chart %s version %s of %s", r.Name, r.Version, r.Repository)
}

// ChartFetcher fetches the packaged chart a ChartRef names. It fails when the chart cannot be
// fetched (the render is then retried, not refused); Load checks the digest of what it returns.
type ChartFetcher interface {
	FetchChart(ref ChartRef) ([]byte, error)
}

// chartDigestRE is the form of a pinned digest.
var chartDigestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// newPulledChart checks a pulled chart's declaration.
func newPulledChart(m *manifest, at int, c *convoyv1alpha1.PackageManifestChart, errs *errorList) *chartPackage {
	switch {
	case c.Name == "" || c.Version == "" || c.Digest == "":
		errs.add(m.file, at, RuleInvalidManifest, "a chart pulled from a repository needs name, version and digest")
	case !chartDigestRE.MatchString(c.Digest):
		errs.add(m.file, at, RuleInvalidManifest, "spec.chart.digest %q: want sha256: and 64 lowercase hex digits", c.Digest)
	default:
		ref := &ChartRef{Repository: c.Repository, Name: c.Name, Version: c.Version, Digest: c.Digest}
		return &chartPackage{spec: c, path: c.Name + "-" + c.Version + chartArchiveExtension, valuesFiles: cleanPaths(c.ValuesFiles), pull: ref}
	}
	return nil
}

// pullChart fetches a pulled chart into req, refusing it when its digest is not the pinned one.
func (c *chartPackage) pullChart(r chartRender, req *chartRequest) error {
	if r.data.Charts == nil {
		r.errs.add(r.m.file, r.m.lines.line("spec.chart"), RuleChart, "%s cannot be pulled here: no chart fetcher", c.pull)
		return nil
	}
	data, err := r.data.Charts.FetchChart(*c.pull)
	if err != nil {
		return fmt.Errorf("fetching %s: %w", c.pull, err)
	}
	sum := sha256.Sum256(data)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != c.pull.Digest {
		r.errs.add(r.m.file, r.m.lines.line("spec.chart.digest"), RuleChartDigest,
			"%s has digest %s, not the pinned %s: refused, nothing is applied", c.pull, got, c.pull.Digest)
		return nil
	}
	if !r.pf.grow(len(data)) {
		r.errs.add(c.path, 0, RuleLimit, "the package is larger than %d bytes", MaxPackageSize)
		return nil
	}
	req.Archive, req.Name, req.Version = data, c.pull.Name, c.pull.Version
	return nil
}

// cleanPaths cleans slash-separated paths.
func cleanPaths(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = path.Clean(p)
	}
	return out
}
