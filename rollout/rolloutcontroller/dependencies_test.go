package rolloutcontroller

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestCycleThrough finds the cycles of spec.dependsOn through a HostedClusterPackage, members
// named in order, and none that it only leads to.
func TestCycleThrough(t *testing.T) {
	edges := map[string][]string{
		"webhook":      {"cert-manager", "monitoring"},
		"cert-manager": {"crds"},
		"monitoring":   {"crds", "logging"},
		"logging":      {"webhook"},
		"self":         {"self"},
		"leads":        {"logging"},
	}
	for _, tc := range []struct {
		start string
		want  []string
	}{
		{"webhook", []string{"webhook", "monitoring", "logging", "webhook"}},
		{"logging", []string{"logging", "webhook", "monitoring", "logging"}},
		{"self", []string{"self", "self"}},
		{"cert-manager", nil},
		{"leads", nil},
		{"absent", nil},
	} {
		t.Run(tc.start, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(cycleThrough(tc.start, edges)).To(Equal(tc.want))
		})
	}
}
