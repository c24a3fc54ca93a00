package manifests

import (
	"testing"
	"testing/fstest"

	. "github.com/onsi/gomega"
)

func TestLoadPhasesInManifestOrder(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(map[string]string{
		"z.yaml":        configMap("z", "one"),
		"a/b.yml":       configMap("b", "two") + "---\n" + configMap("c", "one"),
		"pko.yaml":      "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  annotations: {package-operator.run/phase: two}\n",
		"README.md":     "not read",
		"values.json":   "{}",
		"empty.yaml":    "# nothing\n",
		"notes.gotmpl2": "{{ not a template",
	}), TemplateData{})
	g.Expect(r.Name).To(Equal("test"))
	g.Expect(r.Phases).To(HaveLen(2))
	g.Expect(r.Phases[0].Name).To(Equal("one"))
	g.Expect(r.Phases[1].Class).To(Equal("hosted-cluster"))
	g.Expect(objectNames(r)).To(Equal([]string{"one/ConfigMap/c", "one/ConfigMap/z", "two/ConfigMap/b", "two/Secret/s"}))
	for _, ph := range r.Phases {
		for _, o := range ph.Objects {
			g.Expect(o.GetAnnotations()).To(BeEmpty(), "phase annotations are removed")
		}
	}
	g.Expect(r.NeedsHostedCluster()).To(BeTrue())
}

func TestLoadKeepsOtherAnnotations(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(map[string]string{"a.yaml": configMap("a", "one") + "    convoy.dev/adopt: \"true\"\n"}), TemplateData{})
	g.Expect(r.Phases[0].Objects[0].GetAnnotations()).To(Equal(map[string]string{"convoy.dev/adopt": "true"}))
	g.Expect(r.NeedsHostedCluster()).To(BeFalse(), "the hosted-cluster phase is empty")
}

func TestLoadSkipsHiddenAndIgnoredFiles(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(map[string]string{
		"a.yaml":                configMap("a", "one"),
		".hidden.yaml":          "broken: : :",
		".git/config.yaml":      "broken: : :",
		"sub/.secret/x.yaml":    "broken: : :",
		".convoyignore":         "# test fixtures\ntestdata/\n/docs/*.yaml\n*.draft.yaml\n",
		"testdata/t.yaml":       "broken: : :",
		"nested/testdata/t.yml": "broken: : :",
		"docs/example.yaml":     "broken: : :",
		"other/docs/kept.yaml":  configMap("kept", "two"),
		"wip.draft.yaml":        "broken: : :",
	}), TemplateData{})
	g.Expect(objectNames(r)).To(Equal([]string{"one/ConfigMap/a", "two/ConfigMap/kept"}))
}

func TestLoadSubdirectory(t *testing.T) {
	g := NewWithT(t)
	fsys := fstest.MapFS{
		"packages/addon/manifest.yaml": {Data: []byte(testManifest)},
		"packages/addon/a.yaml":        {Data: []byte(configMap("a", "one"))},
		"packages/other/b.yaml":        {Data: []byte("broken: : :")},
	}
	r, err := Load(fsys, "packages/addon/", TemplateData{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objectNames(r)).To(Equal([]string{"one/ConfigMap/a"}))

	_, err = Load(fsys, "packages/missing", TemplateData{})
	g.Expect(err).To(MatchError(ContainSubstring("cannot read the package directory")))
}

func TestLoadManifestYML(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(map[string]string{"manifest.yml": testManifest, "a.yaml": configMap("a", "one")}), TemplateData{})
	g.Expect(objectNames(r)).To(Equal([]string{"one/ConfigMap/a"}))

	errs := loadErrors(t, pkgFS(map[string]string{"manifest.yml": testManifest, "manifest.yaml": testManifest}), TemplateData{})
	g.Expect(errs).To(haveProblem("manifest.yml", RuleInvalidManifest, "both"))
}

func TestLoadTooManyFiles(t *testing.T) {
	g := NewWithT(t)
	fsys := pkgFS(nil)
	for i := range MaxFiles + 1 {
		fsys[fmtName(i)] = &fstest.MapFile{Data: []byte("# empty\n")}
	}
	errs := loadErrors(t, fsys, TemplateData{})
	g.Expect(errs).To(HaveLen(1))
	g.Expect(errs[0].Rule).To(Equal(RuleLimit))
}

// fmtName names the i-th generated file.
func fmtName(i int) string {
	return "gen/" + string(rune('a'+i%26)) + "/" + itoa6(i) + ".yaml"
}

// itoa6 formats i with six digits.
func itoa6(i int) string {
	b := []byte("000000")
	for j := 5; j >= 0 && i > 0; j-- {
		b[j] = byte('0' + i%10)
		i /= 10
	}
	return string(b)
}
