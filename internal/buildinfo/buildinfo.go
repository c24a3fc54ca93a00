package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Set by the Makefile: go build -ldflags "-X github.com/convoy-gitops/convoy/internal/buildinfo.version=v0.1.0 ...".
var (
	version   string
	revision  string
	buildDate string
)

// unknown stands for a fact neither -ldflags nor the toolchain recorded.
const unknown = "unknown"

// Info is what a convoy binary knows about its own build.
type Info struct {
	// Version is the module version (a tag such as v0.1.0, or a pseudo-version), or "(devel)".
	Version string `json:"version"`
	// Revision is the Git commit the binary was built from, with "-dirty" when the work tree had
	// changes.
	Revision string `json:"revision"`
	// BuildDate is when the binary was built (RFC 3339), or the commit's date without -ldflags.
	BuildDate string `json:"buildDate"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is the operating system and architecture, such as linux/amd64.
	Platform string `json:"platform"`
}

// Get returns the build facts of the running binary.
func Get() Info {
	info := Info{Version: version, Revision: revision, BuildDate: buildDate,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		fillFromToolchain(&info, bi)
	}
	for _, field := range []*string{&info.Version, &info.Revision, &info.BuildDate} {
		if *field == "" {
			*field = unknown
		}
	}
	return info
}

// fillFromToolchain fills the facts -ldflags left empty from what the Go toolchain recorded:
// the main module's version and the vcs.* settings of -buildvcs.
func fillFromToolchain(info *Info, bi *debug.BuildInfo) {
	if info.Version == "" {
		info.Version = bi.Main.Version
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if info.Revision == "" && settings["vcs.revision"] != "" {
		info.Revision = settings["vcs.revision"]
		if settings["vcs.modified"] == "true" {
			info.Revision += "-dirty"
		}
	}
	if info.BuildDate == "" {
		info.BuildDate = settings["vcs.time"]
	}
}

// String prints the facts one per line, as `convoy version` does.
func (i Info) String() string {
	return fmt.Sprintf("version:    %s\nrevision:   %s\nbuild date: %s\ngo version: %s\nplatform:   %s\n",
		i.Version, i.Revision, i.BuildDate, i.GoVersion, i.Platform)
}

// NewCollector returns the convoy_build_info gauge: always 1, with the build facts as labels,
// so that a query can join them to any other series of the same target.
func NewCollector() prometheus.Collector {
	info := Get()
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "convoy_build_info",
		Help: "A metric with a constant value of 1, labelled by the version, Git revision, build date and Go version convoy was built from.",
		ConstLabels: prometheus.Labels{"version": info.Version, "revision": info.Revision,
			"builddate": info.BuildDate, "goversion": info.GoVersion},
	})
	gauge.Set(1)
	return gauge
}
