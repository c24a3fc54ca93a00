package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// soakPanel is one chart of the soak's picture: series drawn over the run's time.
type soakPanel struct {
	title  string
	series []soakLine
}

// soakLine is one series of a panel.
type soakLine struct {
	label string
	color string
	value func(SoakSample) float64
}

// soakPanels are the charts of the picture: memory, goroutines and descriptors, render
// processes, queues and caches, objects.
var soakPanels = []soakPanel{
	{"controller memory (MiB)", []soakLine{
		{"RSS", "#1f77b4", func(s SoakSample) float64 { return float64(s.RSS) / (1 << 20) }},
		{"Go heap in use", "#ff7f0e", func(s SoakSample) float64 { return float64(s.Heap) / (1 << 20) }}}},
	{"goroutines and open descriptors", []soakLine{
		{"goroutines", "#2ca02c", func(s SoakSample) float64 { return float64(s.Goroutines) }},
		{"fds", "#9467bd", func(s SoakSample) float64 { return float64(s.FDs) }}}},
	{"render processes", []soakLine{
		{"running", "#d62728", func(s SoakSample) float64 { return float64(s.RenderRunning) }},
		{"zombie + orphaned", "#000000", func(s SoakSample) float64 { return float64(s.RenderZombies + s.RenderOrphans) }}}},
	{"work queues and caches", []soakLine{
		{"queue depth", "#8c564b", func(s SoakSample) float64 { return s.QueueDepth }},
		{"render cache entries", "#e377c2", func(s SoakSample) float64 { return s.RenderCache }},
		{"ledger entries / 10", "#17becf", func(s SoakSample) float64 { return s.Ledger / 10 }}}},
	{"API objects", []soakLine{
		{"Packages", "#1f77b4", func(s SoakSample) float64 { return float64(s.Objects["Package"]) }},
		{"Events", "#ff7f0e", func(s SoakSample) float64 { return float64(s.Objects["Event"]) }},
		{"ControllerRevisions", "#2ca02c", func(s SoakSample) float64 { return float64(s.Objects["ControllerRevision"]) }}}},
}

// Geometry of the picture, in pixels.
const (
	svgWidth       = 900
	svgPanelHeight = 200
	svgMarginLeft  = 70
	svgMarginRight = 170
	svgMarginTop   = 30
	svgGap         = 50
)

// WriteSoakSVG draws the soak's samples as an SVG picture of five charts over time, with the
// seed and the events of the schedule as ticks.
func WriteSoakSVG(w io.Writer, r *SoakResults) error {
	height := svgMarginTop + len(soakPanels)*(svgPanelHeight+svgGap)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">convoy soak: seed %d, %d HostedClusters, %s, %d commits, %d events</text>`+"\n",
		svgMarginLeft, r.Seed, r.Config.Clusters, r.Duration, r.Commits, len(r.Events))
	tmax := 1.0
	if n := len(r.Samples); n > 0 {
		tmax = math.Max(r.Samples[n-1].At, 1)
	}
	for i, p := range soakPanels {
		drawPanel(&b, p, r, svgMarginTop+i*(svgPanelHeight+svgGap)+10, tmax)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// drawPanel draws one chart with its top at y.
func drawPanel(b *strings.Builder, p soakPanel, r *SoakResults, y int, tmax float64) {
	plotW := float64(svgWidth - svgMarginLeft - svgMarginRight)
	vmax := 0.0
	for _, line := range p.series {
		for _, s := range r.Samples {
			vmax = math.Max(vmax, line.value(s))
		}
	}
	vmax = niceCeil(vmax)
	x := func(t float64) float64 { return svgMarginLeft + t/tmax*plotW }
	yv := func(v float64) float64 { return float64(y+svgPanelHeight) - v/vmax*svgPanelHeight }
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", svgMarginLeft, y-4, p.title)
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%.0f" height="%d" fill="none" stroke="#999"/>`+"\n", svgMarginLeft, y, plotW, svgPanelHeight)
	for _, frac := range []float64{0, 0.5, 1} {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", svgMarginLeft-6, yv(frac*vmax)+4, shortNumber(frac*vmax))
	}
	for _, t := range []float64{0, tmax / 2, tmax} {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%.0f min</text>`+"\n", x(t), y+svgPanelHeight+14, t/60)
	}
	for _, ev := range r.Events {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/>`+"\n", x(ev.At), x(ev.At), y+svgPanelHeight-6, y+svgPanelHeight)
	}
	for i, line := range p.series {
		var pts []string
		for _, s := range r.Samples {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.At), yv(line.value(s))))
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", line.color, strings.Join(pts, " "))
		ly := y + 14 + i*16
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n",
			svgWidth-svgMarginRight+10, svgWidth-svgMarginRight+30, ly-4, ly-4, line.color)
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", svgWidth-svgMarginRight+36, ly, line.label)
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten; at least 1.
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// shortNumber prints v with a k suffix past a thousand.
func shortNumber(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.3gk", v/1000)
	}
	return fmt.Sprintf("%.3g", v)
}
