package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
)

// chartPackage writes a package pulling a chart from repository and returns its directory.
func chartPackage(t *testing.T, repository string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pulled")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: pulled}\nspec:\n  chart:\n" +
		"    repository: " + repository + "\n    name: pulled\n    version: 1.0.0\n    digest: sha256:" + strings.Repeat("1", 64) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// countingServer is a loopback server that answers every request with handler and counts them.
func countingServer(t *testing.T, handler http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		requests.Add(1)
		handler(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// TestOfflineCommandsKeepChartFetchesOnTheRepositorysHost renders, validates and diffs a
// package whose chart repository (a local port) redirects to another local port: each command
// refuses the redirect as the controller does, naming the flag, and the other port receives
// nothing; with --chart-allow-redirects-to-other-hosts the redirect is followed.
func TestOfflineCommandsKeepChartFetchesOnTheRepositorysHost(t *testing.T) {
	elsewhere, reached := countingServer(t, http.NotFound)
	hop, _ := countingServer(t, func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, elsewhere.URL+req.URL.Path, http.StatusFound)
	})
	dir := chartPackage(t, hop.URL+"/charts")
	commands := map[string][]string{"render": {"render", dir}, "validate": {"validate", dir}, "diff": {"diff", dir, dir}}
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			reached.Store(0)
			stdout, stderr, err := runCLI(args...)
			g.Expect(err).To(HaveOccurred())
			g.Expect(stdout + stderr + err.Error()).To(ContainSubstring("the chart repository at " + hop.URL + " redirected to " +
				elsewhere.URL + ", another host: refused unless the controller runs with --chart-allow-redirects-to-other-hosts"))
			g.Expect(reached.Load()).To(BeZero(), "the redirect was followed")

			_, _, err = runCLI(append(args, "--chart-allow-redirects-to-other-hosts")...)
			g.Expect(err).To(HaveOccurred(), "the other port has no chart")
			g.Expect(reached.Load()).To(BeNumerically(">=", 1), "the redirect was not followed with the flag")
		})
	}
}

// TestOfflineCommandsRefuseMetadataChartRepositories renders, validates and diffs a package
// whose chart repository is the cloud metadata address: refused by the address policy before
// any connection, naming the flag. With --allow-link-local-addresses the policy is lifted; that
// is read from the fetcher's options, never by sending a request off this machine.
func TestOfflineCommandsRefuseMetadataChartRepositories(t *testing.T) {
	dir := chartPackage(t, "http://169.254.169.254/charts")
	commands := map[string][]string{"render": {"render", dir}, "validate": {"validate", dir}, "diff": {"diff", dir, dir}}
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			stdout, stderr, err := runCLI(args...)
			g.Expect(err).To(HaveOccurred())
			g.Expect(stdout + stderr + err.Error()).To(ContainSubstring(
				"the address 169.254.169.254 is link-local (169.254.0.0/16), where cloud metadata endpoints live: refused unless the controller runs with --allow-link-local-addresses"))
		})
	}
	t.Run("the flags reach the fetcher's options", func(t *testing.T) {
		g := NewWithT(t)
		for _, name := range []string{"render", "validate", "diff"} {
			cmd, _, err := newRootCmd().Find([]string{name})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cmd.Flags().Lookup("allow-link-local-addresses")).NotTo(BeNil(), name)
			g.Expect(cmd.Flags().Lookup("chart-allow-redirects-to-other-hosts")).NotTo(BeNil(), name)
		}
		var f templateDataFlags
		fs := pflag.NewFlagSet("render", pflag.ContinueOnError)
		f.bind(fs)
		g.Expect(f.charts.options().Network.AllowLinkLocal).To(BeFalse())
		g.Expect(f.charts.options().AllowRedirectsToOtherHosts).To(BeFalse())
		g.Expect(fs.Parse([]string{"--allow-link-local-addresses", "--chart-allow-redirects-to-other-hosts"})).To(Succeed())
		g.Expect(f.charts.options().Network.AllowLinkLocal).To(BeTrue())
		g.Expect(f.charts.options().AllowRedirectsToOtherHosts).To(BeTrue())
	})
}
