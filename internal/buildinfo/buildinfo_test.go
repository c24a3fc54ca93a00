package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestLinkerFlagsWinOverTheToolchain(t *testing.T) {
	g := NewWithT(t)
	defer setVars("v0.3.0", "0123456789abcdef", "2026-11-24T08:00:00Z")()
	info := Get()
	g.Expect(info.Version).To(Equal("v0.3.0"))
	g.Expect(info.Revision).To(Equal("0123456789abcdef"))
	g.Expect(info.BuildDate).To(Equal("2026-11-24T08:00:00Z"))
	g.Expect(info.GoVersion).To(Equal(runtime.Version()))
	g.Expect(info.Platform).To(Equal(runtime.GOOS + "/" + runtime.GOARCH))
}

func TestToolchainFillsWhatTheLinkerFlagsLeaveOut(t *testing.T) {
	g := NewWithT(t)
	info := Info{}
	fillFromToolchain(&info, &debug.BuildInfo{
		Main: debug.Module{Version: "v0.2.1"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "fedcba9876543210"},
			{Key: "vcs.time", Value: "2026-11-20T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	})
	g.Expect(info).To(Equal(Info{Version: "v0.2.1", Revision: "fedcba9876543210-dirty", BuildDate: "2026-11-20T10:00:00Z"}))
}

func TestUnrecordedFactsSayUnknown(t *testing.T) {
	g := NewWithT(t)
	defer setVars("", "", "")()
	info := Get()
	// A test binary is built without VCS stamping.
	g.Expect(info.Revision).To(Equal(unknown))
	g.Expect(info.BuildDate).To(Equal(unknown))
	g.Expect(info.String()).To(ContainSubstring("go version: " + runtime.Version()))
}

func TestCollectorServesTheBuildFactsAsLabels(t *testing.T) {
	g := NewWithT(t)
	defer setVars("v0.3.0", "0123456789abcdef", "2026-11-24T08:00:00Z")()
	reg := prometheus.NewRegistry()
	g.Expect(reg.Register(NewCollector())).To(Succeed())
	want := `# HELP convoy_build_info A metric with a constant value of 1, labelled by the version, Git revision, build date and Go version convoy was built from.
# TYPE convoy_build_info gauge
convoy_build_info{builddate="2026-11-24T08:00:00Z",goversion="` + runtime.Version() + `",revision="0123456789abcdef",version="v0.3.0"} 1
`
	g.Expect(testutil.GatherAndCompare(reg, strings.NewReader(want), "convoy_build_info")).To(Succeed())
}

// setVars sets the -ldflags variables and returns what restores them.
func setVars(v, r, d string) func() {
	oldV, oldR, oldD := version, revision, buildDate
	version, revision, buildDate = v, r, d
	return func() { version, revision, buildDate = oldV, oldR, oldD }
}
