package manifests

import (
	"io/fs"
	"os"
	"path/filepath"
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
