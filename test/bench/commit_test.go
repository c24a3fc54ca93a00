package bench

import (
	"testing"

	. "github.com/onsi/gomega"
)

// A run names the commit of the binary it measured as `git log --oneline` does, and keeps
// saying when the tree was modified.
func TestRevisionIsAbbreviatedAndKeepsDirty(t *testing.T) {
	g := NewWithT(t)
	g.Expect(abbreviateRevision("f7dd6742932cdfc0e67982af945c98c6ec1ddf4a")).To(Equal("f7dd674"))
	g.Expect(abbreviateRevision("f7dd6742932cdfc0e67982af945c98c6ec1ddf4a-dirty")).To(Equal("f7dd674-dirty"))
	g.Expect(abbreviateRevision("unknown")).To(BeEmpty())
	g.Expect(abbreviateRevision("")).To(BeEmpty())
}
