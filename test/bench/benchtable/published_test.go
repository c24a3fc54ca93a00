package benchtable

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// Every table published between bench-table markers in README.md and docs/evidence is what its
// committed runs give, figure for figure and verdict for verdict, and no target verdict is
// published outside such a table.
func TestPublishedTablesAreGeneratedFromTheirRuns(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	pages, err := Pages(root)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	fenced := 0
	for _, page := range pages {
		t.Run(page, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(CheckFile(root, page)).To(Succeed())
		})
	}
	for _, page := range pages {
		raw, err := readPage(root, page)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		fences, _ := ParseFences(page, raw)
		fenced += len(fences)
	}
	NewWithT(t).Expect(fenced).To(BeNumerically(">", 0), "the published tables are generated")
}
