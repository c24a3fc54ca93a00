package manifests

import (
	"os"
	"strconv"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

func TestKustomizeBuild(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(map[string]string{
		"kustomization.yaml":      "resources: [base, settings.yaml]\nnamePrefix: x-\nlabels: [{pairs: {team: a}}]\n",
		"base/kustomization.yaml": "resources: [cm.yaml]\n",
		"base/cm.yaml":            configMap("cm", "one"),
		"settings.yaml.gotmpl":    configMap("settings", "two") + "data:\n  ns: {{ .package.namespace }}\n",
		"unused.yaml":             "this file is not listed by the kustomization: : :\n",
	}), TemplateData{Package: PackageRef{Namespace: "clusters-demo"}})
	g.Expect(objectNames(r)).To(Equal([]string{"one/ConfigMap/x-cm", "two/ConfigMap/x-settings"}))
	settings := r.Phases[1].Objects[0]
	g.Expect(settings.GetLabels()).To(Equal(map[string]string{"team": "a"}))
	g.Expect(settings.GetAnnotations()).To(BeEmpty(), "phase and origin annotations are removed")
	g.Expect(settings.Object["data"]).To(Equal(map[string]any{"ns": "clusters-demo"}))
}

func TestKustomizeErrorsNameTheSourceFile(t *testing.T) {
	g := NewWithT(t)
	errs := loadErrors(t, pkgFS(map[string]string{
		"kustomization.yaml":      "resources: [base]\n",
		"base/kustomization.yaml": "resources: [cm.yaml]\n",
		"base/cm.yaml":            configMap("cm", "nope"),
	}), TemplateData{})
	g.Expect(errs).To(haveProblem("base/cm.yaml", RuleUnknownPhase, `names phase "nope"`))
}

func TestKustomizationOutsideThePackageIsRefused(t *testing.T) {
	cases := map[string]struct {
		kustomization string
		fragment      string
	}{
		"parent directory": {"resources: [../shared]\n", `resources[0] "../shared" points outside the package directory`},
		"deep parent":      {"resources: [base/../../x.yaml]\n", "points outside the package directory"},
		"absolute path":    {"resources: [/etc/passwd]\n", "is an absolute path"},
		"remote base":      {"resources: ['github.com/example/repo//deploy?ref=main']\n", "is remote"},
		"ssh remote":       {"resources: ['git@github.com:example/repo.git']\n", "is remote"},
		"url":              {"resources: ['https://example.com/cm.yaml']\n", "is remote"},
		"patch file":       {"resources: [cm.yaml]\npatches:\n- path: ../p.yaml\n", `patches[0].path "../p.yaml" points outside`},
		"generator file":   {"configMapGenerator:\n- name: x\n  files: [k=../secret.txt]\n", "points outside"},
		"missing file":     {"resources: [nothere.yaml]\n", "is not a file or directory of the package"},
		"helm":             {"helmCharts:\n- name: x\n  repo: https://charts.example.com\n", "helmCharts is not supported"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			errs := loadErrors(t, pkgFS(map[string]string{
				"kustomization.yaml": tc.kustomization,
				"cm.yaml":            configMap("cm", "one"),
			}), TemplateData{})
			g.Expect(errs).To(haveProblem("kustomization.yaml", RuleKustomizeOutside, tc.fragment))
		})
	}
}

func TestKustomizationInSubdirectoryRefersOutsideThePackage(t *testing.T) {
	g := NewWithT(t)
	errs := loadErrors(t, pkgFS(map[string]string{
		"kustomization.yaml":      "resources: [base]\n",
		"base/kustomization.yaml": "resources: [../../elsewhere]\n",
	}), TemplateData{})
	g.Expect(errs).To(haveProblem("base/kustomization.yaml", RuleKustomizeOutside, "points outside the package directory"))
}

func TestKustomizationOnlyAtRoot(t *testing.T) {
	g := NewWithT(t)
	errs := loadErrors(t, pkgFS(map[string]string{
		"a.yaml":                 configMap("a", "one"),
		"sub/kustomization.yaml": "resources: [b.yaml]\n",
	}), TemplateData{})
	g.Expect(errs).To(haveProblem("sub/kustomization.yaml", RuleKustomize, "only built at the package root"))
}

func TestKustomizeReadsIgnoredFilesAsAbsent(t *testing.T) {
	g := NewWithT(t)
	errs := loadErrors(t, pkgFS(map[string]string{
		".convoyignore":      "secret.yaml\n",
		"kustomization.yaml": "resources: [secret.yaml]\n",
		"secret.yaml":        configMap("s", "one"),
	}), TemplateData{})
	g.Expect(errs).To(haveProblem("kustomization.yaml", RuleKustomizeOutside, "is not a file or directory of the package"))
}

func TestKustomizeConcurrentBuilds(t *testing.T) {
	g := NewWithT(t)
	fsys := os.DirFS("../examples/packages/metrics-forwarder")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Load(fsys, ".", TemplateData{Package: PackageRef{Name: "p", Namespace: "ns-" + strconv.Itoa(i)}})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
}
