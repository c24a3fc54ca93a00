package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// Names of the install file.
const (
	releaseTag          = "v0.1.0"
	controllerNamespace = "convoy-system"
	serviceAccount      = "convoy-controller"
	// applierServiceAccount is the least-privileged ServiceAccount Packages apply as when they
	// name none (the Deployment's --default-service-account).
	applierServiceAccount = "convoy-package-applier"
	deployDir             = "../../deploy"
	// testRepository is where the test release says its image is.
	testRepository = "registry.example.com/convoy/convoy:" + releaseTag
)

var (
	// env is the management cluster the install file of the suite is applied to.
	env *fleet.Fleet
	// installed are the objects of that install file; installDigest its image's digest.
	installed     []*unstructured.Unstructured
	installDigest string
)

func TestMain(m *testing.M) {
	fleet.Main(m, &env, fleet.Options{}, func(ctx context.Context, f *fleet.Fleet) (func(), error) {
		objs, digest, err := releaseObjects()
		if err != nil {
			return nil, err
		}
		installed, installDigest = objs, digest
		return nil, applyAll(ctx, f.Client, objs)
	})
}

// releaseObjects writes an OCI layout as make image does (of a random image index), runs the
// release on it and returns the install file's objects and the digest it pins.
func releaseObjects() ([]*unstructured.Unstructured, string, error) {
	dir, err := os.MkdirTemp("", "convoy-release-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	layoutDir, err := randomLayout(dir)
	if err != nil {
		return nil, "", err
	}
	out := filepath.Join(dir, "install.yaml")
	if err := run([]string{"-version", releaseTag, "-layout", layoutDir,
		"-image", testRepository, "-deploy", deployDir, "-out", out}); err != nil {
		return nil, "", err
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return nil, "", err
	}
	objs, err := manifests.DecodeObjects("install.yaml", raw)
	if err != nil {
		return nil, "", err
	}
	digest, err := layoutDigest(layoutDir)
	return objs, digest, err
}

// randomLayout writes to dir/oci an OCI layout as make image does, of an image index of one
// random image, and returns its path.
func randomLayout(dir string) (string, error) {
	img, err := random.Image(256, 1)
	if err != nil {
		return "", err
	}
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img})
	path := filepath.Join(dir, "oci")
	p, err := layout.Write(path, empty.Index)
	if err != nil {
		return "", err
	}
	return path, p.AppendIndex(idx)
}

// writeRandomLayout is randomLayout in a test.
func writeRandomLayout(g Gomega, dir string) string {
	path, err := randomLayout(dir)
	g.Expect(err).NotTo(HaveOccurred())
	return path
}

// applyAll applies objs in order with server-side apply, as kubectl apply --server-side does.
func applyAll(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		//nolint:staticcheck // Patch with client.Apply takes unstructured objects as they come.
		if err := c.Patch(ctx, obj.DeepCopy(), client.Apply, client.ForceOwnership, client.FieldOwner("kubectl")); err != nil {
			return err
		}
	}
	return nil
}
