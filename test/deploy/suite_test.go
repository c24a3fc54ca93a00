package deploy

import (
	"context"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/test/fleet"
)

// Names the manifests in deploy/ use.
const (
	controllerNamespace = "convoy-system"
	serviceAccountUser  = "system:serviceaccount:convoy-system:convoy-controller"
	deployDir           = "../../deploy"
)

// env is the management cluster every test applies deploy/ to.
var env *fleet.Fleet

func TestMain(m *testing.M) {
	fleet.Main(m, &env, fleet.Options{}, func(ctx context.Context, f *fleet.Fleet) (func(), error) {
		objs, err := buildDeploy()
		if err != nil {
			return nil, err
		}
		return nil, applyAll(ctx, f.Client, objs)
	})
}

// buildDeploy runs `kustomize build deploy/` and returns the objects.
func buildDeploy() ([]*unstructured.Unstructured, error) { return kustomizeBuild(deployDir) }

// buildOverlay runs `kustomize build examples/deploy/<name>`, an overlay of deploy/, and
// returns the objects.
func buildOverlay(name string) ([]*unstructured.Unstructured, error) {
	return kustomizeBuild(filepath.Join(repositoryRoot, "examples", "deploy", name))
}

// kustomizeBuild runs `kustomize build dir` and returns the objects.
func kustomizeBuild(dir string) ([]*unstructured.Unstructured, error) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	raw, err := resources.AsYaml()
	if err != nil {
		return nil, err
	}
	return manifests.DecodeObjects("kustomize build "+filepath.Base(dir), raw)
}

// applyAll applies objs in order with server-side apply.
func applyAll(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		//nolint:staticcheck // Patch with client.Apply takes unstructured objects as they come.
		if err := c.Patch(ctx, obj, client.Apply, client.ForceOwnership, client.FieldOwner("convoy-deploy-test")); err != nil {
			return err
		}
	}
	return nil
}

// findObject returns the object of kind and name in objs, or nil.
func findObject(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}
