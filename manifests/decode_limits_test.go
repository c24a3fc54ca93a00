package manifests

import (
	"bytes"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestAliasBombsAreRefused loads YAML that its aliases expand a thousandfold: a billion
// strings, and a large string referred to many times (which the YAML library's own alias
// ratio lets through).
func TestAliasBombsAreRefused(t *testing.T) {
	g := NewWithT(t)
	errs, took, grew := loadHostile(t, "alias-bomb", hostileBudget)
	g.Expect(errs).To(haveProblem("big-string.yaml", RuleLimit, "document expands to more than 4194304 bytes through YAML aliases (an alias bomb)"))
	g.Expect(errs).To(haveProblem("laughs.yaml", RuleLimit, "document expands to more than 4194304 bytes through YAML aliases"))
	g.Expect(errs).To(HaveLen(2))
	g.Expect(took).To(BeNumerically("<", time.Second))
	g.Expect(grew).To(BeNumerically("<", 16<<20))
}

// TestCountlessTinyDocumentsStopAtTheLimit loads a file of 400,000 one-line documents (within
// the file size limit): decoding stops past MaxObjects documents, quickly and with bounded
// memory, rather than decoding them all first. Quickly is measured against a file of just
// MaxObjects documents loaded in the same test, so a busy machine slows both alike.
func TestCountlessTinyDocumentsStopAtTheLimit(t *testing.T) {
	g := NewWithT(t)
	tiny := bytes.Repeat([]byte("a: 1\n---\n"), 400_000)
	g.Expect(len(tiny)).To(BeNumerically("<", MaxFileSize))
	fsys := pkgFS(map[string]string{"tiny.yaml": string(tiny)})
	atTheLimit := pkgFS(map[string]string{"tiny.yaml": string(tiny[:MaxObjects*len("a: 1\n---\n")])})

	var errs Errors
	took, baseline := time.Duration(1<<62), time.Duration(1<<62)
	before := heapInUse()
	for range 3 {
		start := time.Now()
		_ = loadErrors(t, atTheLimit, TemplateData{})
		baseline = min(baseline, time.Since(start))
		start = time.Now()
		errs = loadErrors(t, fsys, TemplateData{})
		took = min(took, time.Since(start))
	}
	grew := max(heapInUse(), before) - before
	t.Logf("400k documents: %d problems in %s (%s for %d documents), heap +%d KiB", len(errs), took.Round(time.Millisecond), baseline.Round(time.Millisecond), MaxObjects, grew>>10)
	g.Expect(errs).To(haveProblem("tiny.yaml", RuleLimit, "the package has more than 10000 documents; the rest was not read"))
	g.Expect(errs[0].Line).To(Equal(2*MaxObjects+1), "the limit comes first")
	g.Expect(len(errs)).To(Equal(MaxObjects+1), "one missing-field problem per document read, and the limit")
	g.Expect(took).To(BeNumerically("<", 3*baseline+100*time.Millisecond), "decoding stops at the limit instead of reading all 400,000 documents (40 times the work)")
}

// TestManyAliasLadenDocumentsStopAtTheByteLimit loads documents that each expand to just under
// the per-document bound: decoding stops once their total passes maxDecodedBytes.
func TestManyAliasLadenDocumentsStopAtTheByteLimit(t *testing.T) {
	g := NewWithT(t)
	doc := "big: &big " + strings.Repeat("x", 13_000) + "\ncopies: [" + strings.Repeat("*big, ", 299) + "*big]\n"
	file := strings.Repeat(doc+"---\n", 40)
	errs := loadErrors(t, pkgFS(map[string]string{"many.yaml": file}), TemplateData{})
	g.Expect(errs).To(haveProblem("many.yaml", RuleLimit, "the package's documents expand to more than 134217728 bytes; the rest was not read"))
	g.Expect(errs).NotTo(haveProblem("many.yaml", RuleLimit, "alias bomb"))
}
