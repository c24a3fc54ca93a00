package manifests

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// BenchmarkChartRender loads each vendored parity chart package from scratch (reading the
// chart, rendering it in a render process, decoding and placing its objects) and reports the
// time of a load, the objects rendered and the peak resident memory of the render process
// (peak-rss-MiB, from the kernel's accounting of the child).
func BenchmarkChartRender(b *testing.B) {
	for _, name := range parityCharts {
		b.Run(name, func(b *testing.B) {
			fsys := os.DirFS(filepath.Join("testdata", "charts", name))
			data := parityData(name)
			r, err := Load(fsys, ".", data)
			if err != nil {
				b.Fatal(err)
			}
			objects := 0
			for _, ph := range r.Phases {
				objects += len(ph.Objects)
			}
			var peak int64
			for b.Loop() {
				if peak, err = chartPeakRSS(fsys, data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(objects), "objects")
			b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MiB")
		})
	}
}

// chartPeakRSS loads a chart package as Load does and returns the peak resident memory of its
// render process.
func chartPeakRSS(fsys fs.FS, data TemplateData) (int64, error) {
	var peak int64
	renderObserver = func(res *renderResult) { peak = res.peakRSS }
	defer func() { renderObserver = nil }()
	if _, err := Load(fsys, ".", data); err != nil {
		return 0, err
	}
	return peak, nil
}

// fleetClusters is the number of HostedClusters of BenchmarkChartFleetRollout.
const fleetClusters = 100

// BenchmarkChartFleetRollout loads the vendored metrics-server chart, wholly in the hosted
// cluster, for the Packages of fleetClusters HostedClusters (each in its own HCP namespace),
// four at a time like the controller's workers, through one render cache: what a rollout of a
// new commit renders. "equal-values" gives every cluster the same values from a plain values
// file, "equal-templated-values" from a values template that renders alike for every cluster
// (one chart render, and a template render process per cluster); "per-cluster-values" templates a value from each HostedCluster's name (one render per
// cluster, which is what every chart package cost before renders were shared: the HCP
// namespace made each render distinct). It reports the chart render processes and the time of
// the whole rollout's loads.
func BenchmarkChartFleetRollout(b *testing.B) {
	chart := os.DirFS(filepath.Join("testdata", "charts", "metrics-server"))
	for _, mode := range []struct{ name, file, values string }{
		{"equal-values", "cluster.yaml", "podLabels: {fleet: demo}\n"},
		{"equal-templated-values", "cluster.yaml.gotmpl", "podLabels: {fleet: {{ .revision | quote }}}\n"},
		{"per-cluster-values", "cluster.yaml.gotmpl", "podLabels: {hosted-cluster: {{ .hostedCluster.name | quote }}}\n"},
	} {
		b.Run(mode.name, func(b *testing.B) {
			fsys := fleetChartPackage(b, chart, mode.file, mode.values)
			var renders int64
			for b.Loop() {
				c := NewCacheWithOptions(CacheOptions{Budget: DefaultRenderBudget})
				loadFleet(b, c, fsys)
				renders = c.Stats().ChartRenders
			}
			b.ReportMetric(float64(renders), "chart-renders")
		})
	}
}

// fleetChartPackage is the metrics-server chart with a manifest placing it wholly in the hosted
// cluster and a values file.
func fleetChartPackage(b *testing.B, chart fs.FS, valuesFile, values string) fs.FS {
	files := map[string]string{
		"manifest.yaml": "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: metrics-server}\n" +
			"spec:\n  chart: {path: chart, class: hosted-cluster, namespace: kube-system, valuesFiles: [" + valuesFile + "]}\n",
		valuesFile: values,
	}
	err := fs.WalkDir(chart, "chart", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(chart, p)
		files[p] = string(data)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return pkgFS(files)
}

// loadFleet loads fsys for fleetClusters Packages, four at a time.
func loadFleet(b *testing.B, c *Cache, fsys fs.FS) {
	next := make(chan int)
	errs := make(chan error, fleetClusters)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range next {
				_, err := c.Load(Key{Source: "s", Commit: "c1", Dir: "."}, followerData(i, nil), func() (fs.FS, error) { return fsys, nil })
				errs <- err
			}
		})
	}
	for i := range fleetClusters {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}
