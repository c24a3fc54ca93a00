package deploy

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/manifests"
)

// repositoryRoot is where README.md and examples/ are, seen from this package.
const repositoryRoot = "../.."

// readmeBlock matches a YAML block of the README with the file it shows:
// "<!-- file: PATH -->" on the line before the fence.
var readmeBlock = regexp.MustCompile("(?s)<!-- file: (\\S+) -->\n```yaml\n(.*?)```\n")

// exampleNamespaces are the namespaces the custom resources of examples/ live in.
var exampleNamespaces = []string{"convoy-system", "clusters-early-1"}

func TestReadmeYAMLBlocksAreTheExampleFiles(t *testing.T) {
	g := NewWithT(t)
	readme, err := os.ReadFile(filepath.Join(repositoryRoot, "README.md"))
	g.Expect(err).NotTo(HaveOccurred())
	blocks := readmeBlock.FindAllStringSubmatch(string(readme), -1)
	g.Expect(blocks).NotTo(BeEmpty())
	g.Expect(blocks).To(HaveLen(strings.Count(string(readme), "```yaml")), "every YAML block names its file")
	for _, b := range blocks {
		t.Run(b[1], func(t *testing.T) {
			g := NewWithT(t)
			file, err := os.ReadFile(filepath.Join(repositoryRoot, b[1]))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(b[2]).To(Equal(string(file)), "README block differs from %s", b[1])
			if pkg, ok := packageDir(b[1]); ok {
				_, err := manifests.Load(os.DirFS(filepath.Join(repositoryRoot, pkg)), ".", manifests.TemplateData{
					Package:       manifests.PackageRef{Name: filepath.Base(pkg), Namespace: "clusters-early-1"},
					HostedCluster: &manifests.HostedClusterRef{Namespace: "clusters", Name: "early-1"},
					Revision:      strings.Repeat("0", 40),
				})
				g.Expect(err).NotTo(HaveOccurred(), "package %s does not render", pkg)
			}
		})
	}
}

// packageDir returns the package directory of a file under examples/packages/.
func packageDir(file string) (string, bool) {
	parts := strings.Split(file, "/")
	if len(parts) < 4 || parts[0] != "examples" || parts[1] != "packages" {
		return "", false
	}
	return strings.Join(parts[:3], "/"), true
}

func TestReadmeStartsWithTheTwoCommands(t *testing.T) {
	g := NewWithT(t)
	readme, err := os.ReadFile(filepath.Join(repositoryRoot, "README.md"))
	g.Expect(err).NotTo(HaveOccurred())
	first := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(string(readme))
	g.Expect(first).To(HaveLen(2))
	lines := strings.Split(strings.TrimSpace(first[1]), "\n")
	g.Expect(lines).To(HaveLen(2))
	g.Expect(lines[0]).To(HavePrefix("make demo "))
	g.Expect(lines[1]).To(HavePrefix("make test "))
}

// TestExampleResourcesAreAccepted creates every custom resource of examples/ with a server-side
// dry run, so that the API server's schema and CEL rules check them.
func TestExampleResourcesAreAccepted(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	g := NewWithT(t)
	for _, ns := range exampleNamespaces {
		err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		g.Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
	}
	files, err := filepath.Glob(filepath.Join(repositoryRoot, "examples", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	more, err := filepath.Glob(filepath.Join(repositoryRoot, "examples", "objectdeployments", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	files = append(files, more...)
	g.Expect(files).To(ContainElement(HaveSuffix("hostedclusterpackage.yaml")))
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			g := NewWithT(t)
			raw, err := os.ReadFile(path)
			g.Expect(err).NotTo(HaveOccurred())
			objs, err := manifests.DecodeObjects(path, raw)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(objs).NotTo(BeEmpty())
			for _, obj := range objs {
				err := env.Client.Create(ctx, obj, client.DryRunAll)
				g.Expect(err).NotTo(HaveOccurred(), "%s %s: %v", obj.GetKind(), obj.GetName(), apierrors.ReasonForError(err))
			}
		})
	}
}
