package main

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestRenderTakesAPIVersionsOffline: --api-versions adds to the API versions a chart sees, as
// helm template --api-versions does; a malformed one is refused, naming the flag and the form.
func TestRenderTakesAPIVersionsOffline(t *testing.T) {
	dir := t.TempDir()
	for p, content := range map[string]string{
		"manifest.yaml":    "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: monitored}\nspec:\n  chart: {path: chart, class: hosted-cluster, namespace: monitoring}\n",
		"chart/Chart.yaml": "apiVersion: v2\nname: monitored\nversion: 0.1.0\n",
		"chart/templates/m.yaml": `{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: app}
{{- end }}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, annotations: {apps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}}}
`,
	} {
		g := NewWithT(t)
		g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dir, p), []byte(content), 0o600)).To(Succeed())
	}
	t.Run("without", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := runCLI("render", dir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).NotTo(ContainSubstring("kind: ServiceMonitor"))
		g.Expect(out).To(ContainSubstring(`apps: "true"`), "Helm's built-in set")
	})
	t.Run("with", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := runCLI("render", dir, "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor", "-a", "monitoring.coreos.com/v1")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring("kind: ServiceMonitor"))
		g.Expect(out).To(ContainSubstring(`apps: "true"`), "added to Helm's built-in set")
	})
	t.Run("malformed", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := runCLI("render", dir, "--api-versions", "monitoring.coreos.com ServiceMonitor")
		g.Expect(err).To(MatchError(ContainSubstring(`--api-versions "monitoring.coreos.com ServiceMonitor": want GROUP/VERSION or GROUP/VERSION/KIND`)))
	})
}
