package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/convoy-gitops/convoy/internal/buildinfo"
)

func TestVersionPrintsTheBuildFacts(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	cmd := newRootCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"version"})
	g.Expect(cmd.Execute()).To(Succeed())
	g.Expect(out.String()).To(MatchRegexp(`(?m)^version: +\S+\nrevision: +\S+\nbuild date: +\S+\ngo version: +` + runtime.Version()))

	out.Reset()
	cmd.SetArgs([]string{"version", "-o", "json"})
	g.Expect(cmd.Execute()).To(Succeed())
	var info buildinfo.Info
	g.Expect(json.Unmarshal(out.Bytes(), &info)).To(Succeed())
	g.Expect(info).To(Equal(buildinfo.Get()))
}

func TestVersionRefusesAnUnknownFormat(t *testing.T) {
	g := NewWithT(t)
	err := printVersion(&bytes.Buffer{}, buildinfo.Get(), "xml")
	g.Expect(err).To(MatchError(ContainSubstring(`unknown output format "xml": use text or json`)))
}

// TestBuildInfoGaugeIsRegisteredOnce starts the registration twice, as convoy-dev and the tests
// that restart the controller in one process do, and reads the gauge back.
func TestBuildInfoGaugeIsRegisteredOnce(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	g.Expect(registerBuildInfo(reg)).To(Succeed())
	g.Expect(registerBuildInfo(reg)).To(Succeed())
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(families).To(HaveLen(1))
	g.Expect(families[0].GetName()).To(Equal("convoy_build_info"))
	g.Expect(families[0].GetMetric()[0].GetGauge().GetValue()).To(Equal(1.0))
	labels := map[string]string{}
	for _, l := range families[0].GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	g.Expect(labels).To(HaveKeyWithValue("goversion", runtime.Version()))
	g.Expect(labels).To(HaveKey("version"))
	g.Expect(labels).To(HaveKey("revision"))
}
