package promotion

import (
	"os"
	"testing"

	. "github.com/onsi/gomega"
)

// TestExampleSectorMapParses keeps the sector map of the docs' example valid.
func TestExampleSectorMapParses(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile("../../examples/sectors/sectors.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	m, err := ParseSectorMap("examples/sectors/sectors.yaml", data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Sectors).To(HaveLen(3))
}
