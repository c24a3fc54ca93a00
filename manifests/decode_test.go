package manifests

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestSplitDocuments(t *testing.T) {
	cases := map[string]struct {
		in    string
		lines []int
		texts []string
	}{
		"single":              {"a: 1\n", []int{1}, []string{"a: 1\n"}},
		"leading separator":   {"---\na: 1\n", []int{2}, []string{"a: 1\n"}},
		"two":                 {"a: 1\n---\nb: 2\n", []int{1, 3}, []string{"a: 1\n", "b: 2\n"}},
		"empty documents":     {"---\n---\n# only a comment\n---\n\na: 1\n---\n", []int{5}, []string{"\na: 1\n"}},
		"separator comment":   {"a: 1\n--- # next\nb: 2", []int{1, 3}, []string{"a: 1\n", "b: 2"}},
		"inline content":      {"a: 1\n--- {b: 2}\n", []int{1, 2}, []string{"a: 1\n", "{b: 2}\n"}},
		"document end":        {"a: 1\n...\n---\nb: 2\n", []int{1, 4}, []string{"a: 1\n", "b: 2\n"}},
		"not a separator":     {"a: |\n  ---x\n----\n", []int{1}, []string{"a: |\n  ---x\n----\n"}},
		"crlf":                {"a: 1\r\n---\r\nb: 2\r\n", []int{1, 3}, []string{"a: 1\r\n", "b: 2\r\n"}},
		"indented block text": {"a: |\n  ---\n", []int{1}, []string{"a: |\n  ---\n"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			docs := splitDocuments("f.yaml", []byte(tc.in))
			var lines []int
			var texts []string
			for _, d := range docs {
				lines = append(lines, d.line)
				texts = append(texts, string(d.data))
			}
			g.Expect(lines).To(Equal(tc.lines))
			g.Expect(texts).To(Equal(tc.texts))
		})
	}
}

func TestDecodeList(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(map[string]string{"list.yaml": "apiVersion: v1\nkind: List\nitems:\n- " +
		"{apiVersion: v1, kind: ConfigMap, metadata: {name: a, annotations: {convoy.dev/phase: one}}}\n- " +
		"{apiVersion: v1, kind: Secret, metadata: {name: b, annotations: {convoy.dev/phase: two}}}\n"}), TemplateData{})
	g.Expect(objectNames(r)).To(Equal([]string{"one/ConfigMap/a", "two/Secret/b"}))
}

func TestDecodeKeepsIntegers(t *testing.T) {
	g := NewWithT(t)
	r := mustLoad(t, pkgFS(map[string]string{"a.yaml": configMap("a", "one") + "x: {i: 3, f: 1.5}\n"}), TemplateData{})
	g.Expect(r.Phases[0].Objects[0].Object["x"]).To(Equal(map[string]any{"i": int64(3), "f": 1.5}))
	g.Expect(r.Phases[0].Objects[0].DeepCopy()).NotTo(BeNil(), "objects hold only JSON types")
}
