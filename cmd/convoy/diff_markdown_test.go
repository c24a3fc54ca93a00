package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	"github.com/convoy-gitops/convoy/manifests/diff"
)

// markdownShape is what a Markdown parser sees in a diff comment.
type markdownShape struct {
	// details lists the <details> blocks, each with its summary line.
	details []string
	// fences are the fenced code blocks' languages and contents.
	fences []fence
	// tableRows counts the table's body rows.
	tableRows int
}

type fence struct{ lang, content string }

// parseMarkdown parses md as GitHub-flavoured Markdown and collects its shape, failing the test
// when a <details> block is closed before it is opened or left open.
func parseMarkdown(t *testing.T, md []byte) markdownShape {
	t.Helper()
	g := NewWithT(t)
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(md))
	var shape markdownShape
	open := false
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.HTMLBlock:
			raw := blockText(n, md)
			if strings.HasPrefix(raw, "<details>") {
				g.Expect(open).To(BeFalse(), "nested <details>")
				open = true
				g.Expect(raw).To(MatchRegexp(`^<details>\n<summary>.*</summary>\n$`))
				shape.details = append(shape.details, raw)
			}
			if strings.HasPrefix(raw, "</details>") {
				g.Expect(open).To(BeTrue(), "</details> without <details>")
				open = false
			}
		case *ast.FencedCodeBlock:
			g.Expect(open).To(BeTrue(), "every diff sits in a phase's <details>")
			shape.fences = append(shape.fences, fence{lang: string(n.Language(md)), content: blockText(n, md)})
		case *extast.TableRow:
			shape.tableRows++
		}
		return ast.WalkContinue, nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(open).To(BeFalse(), "a <details> is left open")
	return shape
}

// blockText joins the source lines of a block node.
func blockText(n ast.Node, src []byte) string {
	var b strings.Builder
	lines := n.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		b.Write(seg.Value(src))
	}
	if hb, ok := n.(*ast.HTMLBlock); ok && hb.HasClosure() {
		b.Write(hb.ClosureLine.Value(src))
	}
	return b.String()
}

func TestDiffMarkdownParsesIntoOneDetailsPerPhaseAndOneFencePerObject(t *testing.T) {
	clone := cloneWithChange(t)
	for _, pkg := range []string{"extra-component", "metrics-forwarder", "new-addon"} {
		t.Run(pkg, func(t *testing.T) {
			g := NewWithT(t)
			dir := filepath.Join(clone, "packages", pkg)
			md, _, err := runCLI("diff", dir, "--from", "main~1", "--to", "main", "-o", "markdown")
			g.Expect(err).To(MatchError(errDiffers))
			js, _, _ := runCLI("diff", dir, "--from", "main~1", "--to", "main", "-o", "json")
			var report diff.Report
			g.Expect(json.Unmarshal([]byte(js), &report)).To(Succeed())

			shape := parseMarkdown(t, []byte(md))
			g.Expect(shape.details).To(HaveLen(len(report.Phases)))
			g.Expect(shape.tableRows).To(Equal(len(report.Phases)), "one table row per phase")
			var want []fence
			for i, ph := range report.Phases {
				a, c, r := ph.Counts()
				g.Expect(shape.details[i]).To(ContainSubstring("<code>%s</code> (%s): %d added, %d changed, %d removed", ph.Name, ph.Class, a, c, r))
				for _, o := range ph.Objects {
					if o.Diff != "" {
						want = append(want, fence{lang: "diff", content: o.Diff})
					}
				}
			}
			g.Expect(shape.fences).To(Equal(want), "each fence holds exactly its object's diff, even with backticks in it")
		})
	}
}
