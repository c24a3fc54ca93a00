package pass

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

func TestBoundMessageKeepsWholeLinesAndCountsTheRest(t *testing.T) {
	g := NewWithT(t)
	lines := make([]string, 1000)
	for i := range lines {
		lines[i] = "objects.yaml:12: missing-phase: ConfigMap \"cm\" has no phase: set annotation convoy.dev/phase"
	}
	msg := BoundMessage(strings.Join(lines, "\n"))
	g.Expect(len(msg)).To(BeNumerically("<=", MaxMessageLength))
	kept := strings.Count(msg, "\n")
	g.Expect(msg).To(HaveSuffix("\n… and " + strconv.Itoa(1000-kept) + " more lines"))
	g.Expect(strings.Split(msg, "\n")[:kept]).To(HaveEach(Equal(lines[0])))

	g.Expect(BoundMessage("short")).To(Equal("short"))
}

func TestBoundMessageCutsOneLongLineAtARuneBoundary(t *testing.T) {
	g := NewWithT(t)
	msg := BoundMessage(strings.Repeat("é", 20000))
	g.Expect(len(msg)).To(BeNumerically("<=", MaxMessageLength))
	g.Expect(utf8.ValidString(msg)).To(BeTrue())
	g.Expect(msg).To(MatchRegexp(`^(é)+… and \d+ more bytes$`))
}

func TestSetBoundsTheConditionMessage(t *testing.T) {
	g := NewWithT(t)
	gs := &convoyv1alpha1.GitSource{}
	Set(gs, convoyv1alpha1.StalledCondition, metav1.ConditionTrue, "Broken", strings.Repeat("x\n", 50000))
	g.Expect(len(Get(gs, convoyv1alpha1.StalledCondition).Message)).To(BeNumerically("<=", MaxMessageLength))
}
