package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/convoy-gitops/convoy/internal/buildinfo"
)

// makeImageLayout is where `make image` writes the layout, seen from this package.
const makeImageLayout = "../../dist/oci"

// testVersion is the version the tests stamp into the binary they build.
const testVersion = "v0.0.0-imagetest"

// TestImageRunsItsConvoyBinary builds the image of a static convoy built for this machine,
// unpacks it from the layout as a container runtime would, and runs the binary it holds. It is
// in `make e2e`: it only proves the packaging.
func TestImageRunsItsConvoyBinary(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	idx := buildTestIndex(g, dir)
	digest, err := writeLayout(filepath.Join(dir, "oci"), idx, testVersion)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(digest.String()).To(HavePrefix("sha256:"))

	info := runImageBinary(t, filepath.Join(dir, "oci"))
	g.Expect(info.Version).To(Equal(testVersion))
	g.Expect(info.Revision).To(Equal("0123456789abcdef0123456789abcdef01234567"))
	g.Expect(info.Platform).To(Equal(runtime.GOOS + "/" + runtime.GOARCH))
}

// TestMakeImageLayout checks the layout `make image` wrote: both platforms, and the binary of
// this machine's platform runs. `make image` runs it after the build, with its PLATFORMS in
// $CONVOY_IMAGE_PLATFORMS.
func TestMakeImageLayout(t *testing.T) {
	if _, err := os.Stat(filepath.Join(makeImageLayout, "index.json")); errors.Is(err, os.ErrNotExist) {
		t.Skip("no image layout in dist/oci: run make image")
	}
	g := NewWithT(t)
	idx := layoutIndex(g, makeImageLayout)
	manifest, err := idx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	var platforms []string
	for _, m := range manifest.Manifests {
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	want := strings.Fields(os.Getenv("CONVOY_IMAGE_PLATFORMS"))
	if len(want) == 0 {
		want = []string{"linux/amd64", "linux/arm64"}
	}
	g.Expect(platforms).To(ConsistOf(want), "the platforms of make image")
	info := runImageBinary(t, makeImageLayout)
	g.Expect(info.Version).To(Equal(manifest.Annotations["org.opencontainers.image.version"]))
	g.Expect(info.Revision).To(Equal(manifest.Annotations["org.opencontainers.image.revision"]))
}

// TestPushedIndexIsTheLayoutsIndex pushes an image index to a registry served in the test and
// reads it back by tag: the same digest, every platform's image pullable. The image holds this
// test's own executable: what a push carries does not depend on the binary, and building convoy
// here would cost minutes on a cold cache.
func TestPushedIndexIsTheLayoutsIndex(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	self, err := os.Executable()
	g.Expect(err).NotTo(HaveOccurred())
	idx := testIndex(g, self)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/convoy-gitops/convoy:" + testVersion
	pushed, err := pushIndex(idx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	want, err := idx.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pushed).To(HaveSuffix("/convoy-gitops/convoy@" + want.String()))

	tag, err := name.ParseReference(ref)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := remote.Index(tag)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Digest()).To(Equal(want))
	img, err := remote.Image(tag, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := img.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.version", testVersion))
}

func TestFlagsSayWhatIsMissing(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"no binary":          {[]string{"-version", "v1", "-revision", "r", "-created", "2026-11-24T08:00:00Z"}, "no -binary OS/ARCH=PATH given"},
		"no version":         {[]string{"-binary", "linux/amd64=x", "-revision", "r", "-created", "2026-11-24T08:00:00Z"}, "-version is empty"},
		"bad time":           {[]string{"-binary", "linux/amd64=x", "-version", "v1", "-revision", "r", "-created", "today"}, `-created "today": not an RFC 3339 time`},
		"platform twice":     {[]string{"-binary", "linux/amd64=x", "-binary", "linux/amd64=y", "-version", "v1", "-revision", "r", "-created", "2026-11-24T08:00:00Z"}, "-binary linux/amd64 given twice"},
		"binary no platform": {[]string{"-binary", "x"}, "want OS/ARCH=PATH"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, _, err := parseFlags(c.args)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(c.want)))
		})
	}
}

// buildTestIndex builds a static convoy for this machine into dir and returns the image index
// of it. Unlike `make image` it keeps the source paths (no -trimpath): under make, which turns
// cgo off for every build, it then compiles nothing the tests' builds have not.
func buildTestIndex(g Gomega, dir string) v1.ImageIndex {
	bin := filepath.Join(dir, "convoy")
	pkg := "github.com/convoy-gitops/convoy/internal/buildinfo"
	cmd := exec.Command("go", "build", "-o", bin, "-ldflags",
		"-X "+pkg+".version="+testVersion+" -X "+pkg+".revision=0123456789abcdef0123456789abcdef01234567",
		"../../cmd/convoy")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "go build: %s", out)
	return testIndex(g, bin)
}

// testIndex returns the image index of bin, as this machine's platform's binary.
func testIndex(g Gomega, bin string) v1.ImageIndex {
	idx, err := buildIndex(imageSpec{
		Binaries: []platformBinary{{OS: runtime.GOOS, Arch: runtime.GOARCH, Path: bin}},
		Version:  testVersion, Revision: "0123456789abcdef0123456789abcdef01234567",
		Source: "https://github.com/convoy-gitops/convoy", Created: time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC),
		CABundle: testCABundle(),
	})
	g.Expect(err).NotTo(HaveOccurred())
	return idx
}

// testCABundle returns Debian's CA bundle, which the machine has or not: without it, the image
// gets Go's fallback roots.
func testCABundle() string {
	return caPath
}

// TestCABundleFallsBackToGosRoots builds the CA certificates on a machine without a bundle
// file: Go's fallback roots, every one a certificate x509 parses.
func TestCABundleFallsBackToGosRoots(t *testing.T) {
	g := NewWithT(t)
	raw, source, err := caBundle(filepath.Join(t.TempDir(), "absent.crt"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(source).To(Equal(fallbackBundleSource))
	pool := x509.NewCertPool()
	g.Expect(pool.AppendCertsFromPEM(raw)).To(BeTrue())
	g.Expect(bytes.Count(raw, []byte("-----BEGIN CERTIFICATE-----"))).To(BeNumerically(">", 100))

	_, _, err = caBundle(t.TempDir())
	g.Expect(err).To(MatchError(ContainSubstring("reading the CA certificates")), "a folder is not a bundle")
}

// layoutIndex returns the one image index of the OCI layout in dir.
func layoutIndex(g Gomega, dir string) v1.ImageIndex {
	p, err := layout.FromPath(dir)
	g.Expect(err).NotTo(HaveOccurred())
	top, err := p.ImageIndex()
	g.Expect(err).NotTo(HaveOccurred())
	manifest, err := top.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest.Manifests).To(HaveLen(1), "the layout holds one image index")
	idx, err := top.ImageIndex(manifest.Manifests[0].Digest)
	g.Expect(err).NotTo(HaveOccurred())
	return idx
}

// runImageBinary unpacks the image of this machine's platform from the layout in dir, checks
// the files and config a container runtime reads, and returns what `convoy version -o json`
// printed.
func runImageBinary(t *testing.T, dir string) buildinfo.Info {
	g := NewWithT(t)
	idx := layoutIndex(g, dir)
	manifest, err := idx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	var img v1.Image
	for _, m := range manifest.Manifests {
		if m.Platform.OS == runtime.GOOS && m.Platform.Architecture == runtime.GOARCH {
			img, err = idx.Image(m.Digest)
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	g.Expect(img).NotTo(BeNil(), "no image for %s/%s", runtime.GOOS, runtime.GOARCH)
	cfg, err := img.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Config.User).To(Equal("65532:65532"))
	g.Expect(cfg.Config.Entrypoint).To(Equal([]string{binaryPath}))
	for _, label := range []string{"version", "revision", "source", "created"} {
		g.Expect(cfg.Config.Labels).To(HaveKey("org.opencontainers.image."+label), "label %s", label)
	}

	root := filepath.Join(t.TempDir(), "rootfs")
	unpack(g, img, root)
	g.Expect(os.ReadFile(filepath.Join(root, "etc", "passwd"))).To(ContainSubstring("nonroot:x:65532:65532:"))
	g.Expect(os.ReadFile(filepath.Join(root, "etc", "ssl", "certs", "ca-certificates.crt"))).To(ContainSubstring("BEGIN CERTIFICATE"))
	g.Expect(filepath.Join(root, "tmp")).To(BeADirectory())

	out, err := exec.Command(filepath.Join(root, binaryPath), "version", "-o", "json").Output()
	g.Expect(err).NotTo(HaveOccurred())
	var info buildinfo.Info
	g.Expect(json.Unmarshal(out, &info)).To(Succeed())
	return info
}

// unpack writes the directories and regular files of img's flattened file system under root.
func unpack(g Gomega, img v1.Image, root string) {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		path := filepath.Join(root, filepath.FromSlash(hdr.Name))
		g.Expect(path).To(HavePrefix(root + string(filepath.Separator)))
		switch hdr.Typeflag {
		case tar.TypeDir:
			g.Expect(os.MkdirAll(path, 0o755)).To(Succeed())
		case tar.TypeReg:
			g.Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hdr.Mode).Perm()|0o200)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = io.Copy(f, tr) //nolint:gosec // the test's own image
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(f.Close()).To(Succeed())
		}
	}
}
