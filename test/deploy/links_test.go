package deploy

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// referenceIndex is the index of the generated reference. Links into docs/reference/ are checked
// once it exists: the reference is generated on its own, and the pages link to it ahead.
const referenceIndex = "docs/reference/README.md"

var (
	// markdownLink matches an inline link or image, [text](target), capturing the target.
	markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// fencedBlock matches a fenced code block, whose text holds no links.
	fencedBlock = regexp.MustCompile("(?ms)^ *```.*?^ *```")
	// inlineCode matches inline code, whose text holds no links.
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	// heading matches a Markdown heading, capturing its text.
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	// notInSlug matches what GitHub drops from a heading to make its anchor.
	notInSlug = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// TestDocsLinksResolve follows every relative link of README.md and docs/ (outside
// docs/reference/): its file must exist, and its anchor must name a heading of that file.
func TestDocsLinksResolve(t *testing.T) {
	_, err := os.Stat(filepath.Join(repositoryRoot, referenceIndex))
	checkReference := err == nil
	if !checkReference {
		t.Logf("%s does not exist yet: links into docs/reference/ are not checked", referenceIndex)
	}
	for _, page := range docPages(t) {
		t.Run(page, func(t *testing.T) {
			g := NewWithT(t)
			for _, target := range pageLinks(readPage(t, page)) {
				file, anchor := resolveLink(page, target)
				if file == "" || (!checkReference && strings.HasPrefix(file, "docs/reference/")) {
					continue
				}
				_, err := os.Stat(filepath.Join(repositoryRoot, file))
				g.Expect(err).NotTo(HaveOccurred(), "%s links to %s, which does not exist", page, target)
				if err == nil && anchor != "" && strings.HasSuffix(file, ".md") {
					g.Expect(headingAnchors(readPage(t, file))).To(HaveKey(anchor), "%s links to %s: no such heading", page, target)
				}
			}
		})
	}
}

// pageLinks returns the link targets of a page, outside code.
func pageLinks(text string) []string {
	text = inlineCode.ReplaceAllString(fencedBlock.ReplaceAllString(text, ""), "")
	var targets []string
	for _, m := range markdownLink.FindAllStringSubmatch(text, -1) {
		targets = append(targets, m[1])
	}
	return targets
}

// resolveLink returns the file, relative to the repository root, and the anchor a link of page
// points at; the file is empty for a link out of the repository.
func resolveLink(page, target string) (string, string) {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return "", ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	if file == "" {
		return page, anchor
	}
	return path.Clean(path.Join(path.Dir(page), file)), anchor
}

// headingAnchors returns the anchors GitHub gives the headings of a page, outside code blocks.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fencedBlock.ReplaceAllString(text, ""), -1) {
		slug := strings.ReplaceAll(notInSlug.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}
