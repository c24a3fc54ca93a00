package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Where the image keeps convoy and who runs it.
const (
	binaryPath = "/usr/local/bin/convoy"
	caPath     = "/etc/ssl/certs/ca-certificates.crt"
	nonRootID  = 65532
)

// passwd and group name the image's users: root, and nonroot, the user the image runs as (the
// uid and gid deploy/manager/deployment.yaml sets).
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// imageSpec is what goes into the image index.
type imageSpec struct {
	Binaries []platformBinary
	Version  string
	Revision string
	Source   string
	Created  time.Time
	CABundle string
}

// platformBinary is the convoy binary of one platform.
type platformBinary struct {
	OS, Arch, Path string
}

// validate says what is missing from the specification.
func (s imageSpec) validate() error {
	switch {
	case len(s.Binaries) == 0:
		return errors.New("no -binary OS/ARCH=PATH given")
	case s.Version == "":
		return errors.New("-version is empty")
	case s.Revision == "":
		return errors.New("-revision is empty")
	}
	seen := map[string]bool{}
	for _, b := range s.Binaries {
		if seen[b.OS+"/"+b.Arch] {
			return fmt.Errorf("-binary %s/%s given twice", b.OS, b.Arch)
		}
		seen[b.OS+"/"+b.Arch] = true
	}
	return nil
}

// labels are the OCI annotations of the image, in its config and on the index.
func (s imageSpec) labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "convoy",
		"org.opencontainers.image.version":  s.Version,
		"org.opencontainers.image.revision": s.Revision,
		"org.opencontainers.image.source":   s.Source,
		"org.opencontainers.image.created":  s.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
}

// buildIndex builds one image per platform and the OCI image index of them all.
func buildIndex(spec imageSpec) (v1.ImageIndex, error) {
	ca, _, err := caBundle(spec.CABundle)
	if err != nil {
		return nil, err
	}
	base, err := filesLayer(spec.Created, baseFiles(ca))
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range spec.Binaries {
		img, err := platformImage(spec, b, base)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: b.OS, Architecture: b.Arch}}})
	}
	annotated, ok := mutate.Annotations(idx, spec.labels()).(v1.ImageIndex)
	if !ok {
		return nil, errors.New("annotating the image index")
	}
	return annotated, nil
}

// platformImage is the image of one platform: the base layer, then the binary's.
func platformImage(spec imageSpec, b platformBinary, base v1.Layer) (v1.Image, error) {
	bin, err := os.ReadFile(b.Path)
	if err != nil {
		return nil, fmt.Errorf("reading the %s/%s binary: %w", b.OS, b.Arch, err)
	}
	binLayer, err := filesLayer(spec.Created, []file{{path: binaryPath, mode: 0o755, data: bin}})
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, base, binLayer)
	if err != nil {
		return nil, err
	}
	user := fmt.Sprintf("%d:%d", nonRootID, nonRootID)
	return mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: b.Arch, OS: b.OS, Created: v1.Time{Time: spec.Created},
		RootFS: mustRootFS(img),
		Config: v1.Config{
			Entrypoint: []string{binaryPath}, User: user, WorkingDir: "/", Labels: spec.labels(),
			Env: []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=" + caPath, "HOME=/home/nonroot"},
		},
	})
}

// mustRootFS returns the layer digests of img, which AppendLayers has just computed.
func mustRootFS(img v1.Image) v1.RootFS {
	cfg, err := img.ConfigFile()
	if err != nil {
		panic(err) // An image built in memory has a config.
	}
	return cfg.RootFS
}

// file is one entry of a layer: a directory when data is nil and the mode says so.
type file struct {
	path string
	mode fs.FileMode
	uid  int
	data []byte
}

// baseFiles are what a process in the image expects besides convoy: users, CA certificates,
// a home and a /tmp.
func baseFiles(ca []byte) []file {
	return []file{
		{path: "/etc/", mode: fs.ModeDir | 0o755},
		{path: "/etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "/etc/group", mode: 0o644, data: []byte(group)},
		{path: "/etc/ssl/", mode: fs.ModeDir | 0o755},
		{path: "/etc/ssl/certs/", mode: fs.ModeDir | 0o755},
		{path: caPath, mode: 0o644, data: ca},
		{path: "/home/", mode: fs.ModeDir | 0o755},
		{path: "/home/nonroot/", mode: fs.ModeDir | 0o700, uid: nonRootID},
		{path: "/tmp/", mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{path: "/usr/", mode: fs.ModeDir | 0o755},
		{path: "/usr/local/", mode: fs.ModeDir | 0o755},
		{path: "/usr/local/bin/", mode: fs.ModeDir | 0o755},
	}
}

// filesLayer returns a gzip-compressed OCI layer of files, every one dated at t.
func filesLayer(t time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: f.path[1:], Mode: int64(f.mode.Perm()), Uid: f.uid, Gid: f.uid,
			ModTime: t, Typeflag: tar.TypeReg, Size: int64(len(f.data)), Format: tar.FormatPAX}
		if f.mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		if f.mode.IsDir() {
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// writeLayout replaces dir with an OCI image layout holding idx, tagged with version, and
// returns the index's digest.
func writeLayout(dir string, idx v1.ImageIndex, version string) (v1.Hash, error) {
	if err := os.RemoveAll(dir); err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("writing the layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": version})); err != nil {
		return v1.Hash{}, fmt.Errorf("writing the image index to %s: %w", dir, err)
	}
	return idx.Digest()
}

// pushIndex pushes idx to ref and returns the reference by digest it was pushed as.
func pushIndex(idx v1.ImageIndex, ref string, opts ...remote.Option) (string, error) {
	tag, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("-push %q: %w", ref, err)
	}
	if err := remote.WriteIndex(tag, idx, opts...); err != nil {
		return "", fmt.Errorf("pushing to %s: %w", ref, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return tag.Context().Digest(digest.String()).String(), nil
}
