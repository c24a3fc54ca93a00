package devdemo

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestDevClustersSpreadOverPartitionsInOrder(t *testing.T) {
	g := NewWithT(t)
	var got []string
	for _, in := range devClusters(6) {
		got = append(got, in.Name)
	}
	g.Expect(got).To(Equal([]string{"early-1", "early-2", "normal-3", "normal-4", "late-5", "late-6"}))
}
