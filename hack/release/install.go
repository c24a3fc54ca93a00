package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// defaultRepository is the image deploy/manager/deployment.yaml names.
const defaultRepository = "ghcr.io/convoy-gitops/convoy"

// installInput is what a release pins.
type installInput struct {
	// DeployDir is the kustomize base, deploy/.
	DeployDir string
	// Version labels every object (app.kubernetes.io/version).
	Version string
	// Repository is where the image is pulled from; a tag is dropped.
	Repository string
	// Digest is the image index's digest, sha256:….
	Digest string
}

// layoutDigest returns the digest of the one image index of the OCI layout in dir.
func layoutDigest(dir string) (string, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return "", fmt.Errorf("reading the image layout %s (run make image first): %w", dir, err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return "", fmt.Errorf("reading %s/index.json: %w", dir, err)
	}
	if len(manifest.Manifests) != 1 {
		return "", fmt.Errorf("%s/index.json: holds %d manifests, want the one image index make image writes", dir, len(manifest.Manifests))
	}
	return manifest.Manifests[0].Digest.String(), nil
}

// buildInstall builds in.DeployDir with an overlay that pins the image to in.Digest and labels
// every object with in.Version, and returns the YAML with a header saying what it is.
func buildInstall(in installInput) ([]byte, error) {
	repo, err := name.ParseReference(in.Repository)
	if err != nil {
		return nil, fmt.Errorf("-image %q: %w", in.Repository, err)
	}
	if !strings.HasPrefix(in.Digest, "sha256:") {
		return nil, fmt.Errorf("image digest %q: want sha256:…", in.Digest)
	}
	mem := filesys.MakeFsInMemory()
	if err := copyTree(in.DeployDir, mem, "/deploy"); err != nil {
		return nil, err
	}
	overlay := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../deploy
images:
- name: %s
  newName: %s
  digest: %s
labels:
- pairs:
    app.kubernetes.io/version: %s
`, defaultRepository, repo.Context().Name(), in.Digest, in.Version)
	if err := mem.WriteFile("/release/kustomization.yaml", []byte(overlay)); err != nil {
		return nil, err
	}
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/release")
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", in.DeployDir, err)
	}
	raw, err := resources.AsYaml()
	if err != nil {
		return nil, err
	}
	header := fmt.Sprintf("# convoy %s: kubectl apply -f install.yaml\n# Built from deploy/ by make release; the image is %s@%s.\n",
		in.Version, repo.Context().Name(), in.Digest)
	return append([]byte(header), raw...), nil
}

// copyTree copies the YAML files under dir on disk to the folder to of mem.
func copyTree(dir string, mem filesys.FileSystem, to string) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return mem.WriteFile(filepath.ToSlash(filepath.Join(to, rel)), raw)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the kustomize base %s does not exist: %w", dir, err)
	}
	return err
}
