package deploy

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/test/docstest"
)

// repositoryRoot is where README.md, docs/ and examples/ are, seen from this package.
const repositoryRoot = "../.."

// readmeMaxLines is the most lines README.md may have: a newcomer reads it in five minutes.
const readmeMaxLines = 200

// yamlBlock matches a YAML block of a Markdown page, with the "<!-- file: PATH -->" line before
// its fence when it shows an example file.
var yamlBlock = regexp.MustCompile("(?s)(?:<!-- file: (\\S+) -->\n)?```yaml\n(.*?)```\n")

// exampleNamespaces are the namespaces the custom resources of examples/ live in.
var exampleNamespaces = []string{"convoy-system", "clusters-early-1"}

// docBlock is one YAML block of a page.
type docBlock struct {
	page, file, text string
}

// docPages returns the pages of docstest.Pages.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := docstest.Pages(repositoryRoot)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return pages
}

// readPage returns the text of a page relative to the repository root.
func readPage(t *testing.T, page string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repositoryRoot, page))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return string(raw)
}

// docBlocks returns every YAML block of the pages, and fails when a block is not matched.
func docBlocks(t *testing.T) []docBlock {
	t.Helper()
	g := NewWithT(t)
	var blocks []docBlock
	for _, page := range docPages(t) {
		text := readPage(t, page)
		found := yamlBlock.FindAllStringSubmatch(text, -1)
		g.Expect(found).To(HaveLen(strings.Count(text, "```yaml")), "%s has a YAML block this test cannot read", page)
		for _, b := range found {
			blocks = append(blocks, docBlock{page: page, file: b[1], text: b[2]})
		}
	}
	return blocks
}

func TestDocsYAMLBlocksAreTheExampleFiles(t *testing.T) {
	blocks := docBlocks(t)
	NewWithT(t).Expect(blocks).NotTo(BeEmpty())
	for _, b := range blocks {
		if b.file == "" {
			continue
		}
		t.Run(b.page+"/"+b.file, func(t *testing.T) {
			g := NewWithT(t)
			file, err := os.ReadFile(filepath.Join(repositoryRoot, b.file))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(b.text).To(Equal(string(file)), "the block of %s differs from %s", b.page, b.file)
			if pkg, ok := packageDir(b.file); ok {
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

// TestDocsYAMLBlocksWithoutAFileAreValid checks the blocks that show no example file: a
// PackageManifest is loaded as the manifest.yaml of a package, anything else is created with a
// server-side dry run, as TestExampleResourcesAreAccepted does for examples/.
func TestDocsYAMLBlocksWithoutAFileAreValid(t *testing.T) {
	for _, b := range docBlocks(t) {
		if b.file != "" {
			continue
		}
		t.Run(b.page, func(t *testing.T) {
			g := NewWithT(t)
			if isPackageManifest(b.text) {
				fsys := fstest.MapFS{"manifest.yaml": {Data: []byte(b.text)}}
				_, err := manifests.LoadStatic(fsys, ".", "")
				g.Expect(err).NotTo(HaveOccurred(), "a PackageManifest block of %s", b.page)
				return
			}
			env.Require(t)
			objs, err := manifests.DecodeObjects(b.page, []byte(b.text))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(objs).NotTo(BeEmpty())
			for _, obj := range objs {
				ensureNamespace(t, obj.GetNamespace())
				err := env.Client.Create(context.Background(), obj, client.DryRunAll)
				g.Expect(err).NotTo(HaveOccurred(), "%s: %s %s: %v", b.page, obj.GetKind(), obj.GetName(), apierrors.ReasonForError(err))
			}
		})
	}
}

// isPackageManifest tells whether a YAML block is a PackageManifest, convoy's or Package
// Operator's.
func isPackageManifest(text string) bool {
	return regexp.MustCompile(`(?m)^kind: PackageManifest\s*$`).MatchString(text)
}

// ensureNamespace creates the namespace ns when it is not empty and does not exist yet.
func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	if ns == "" {
		return
	}
	err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	NewWithT(t).Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
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
	readme := readPage(t, "README.md")
	first := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(readme)
	g.Expect(first).To(HaveLen(2))
	lines := strings.Split(strings.TrimSpace(first[1]), "\n")
	g.Expect(lines).To(HaveLen(2))
	g.Expect(lines[0]).To(HavePrefix("make demo "))
	g.Expect(lines[1]).To(HavePrefix("make test "))
}

func TestReadmeIsShort(t *testing.T) {
	lines := strings.Count(readPage(t, "README.md"), "\n")
	NewWithT(t).Expect(lines).To(BeNumerically("<=", readmeMaxLines), "README.md has %d lines", lines)
}

// TestExampleResourcesAreAccepted creates every custom resource of examples/ with a server-side
// dry run, so that the API server's schema and CEL rules check them.
func TestExampleResourcesAreAccepted(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	g := NewWithT(t)
	for _, ns := range exampleNamespaces {
		ensureNamespace(t, ns)
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
