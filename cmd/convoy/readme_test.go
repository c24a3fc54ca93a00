package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
)

// TestReadmeListsEveryControllerFlag keeps the configuration reference of README.md in step with
// the flags of convoy controller and their defaults.
func TestReadmeListsEveryControllerFlag(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile("../../README.md")
	g.Expect(err).NotTo(HaveOccurred())
	readme := string(raw)
	newControllerCmd().Flags().VisitAll(func(f *pflag.Flag) {
		def := "none"
		if f.DefValue != "" {
			def = fmt.Sprintf("`%s`", f.DefValue)
		}
		row := fmt.Sprintf("| `--%s`", f.Name)
		g.Expect(readme).To(ContainSubstring(row), "README lacks --%s", f.Name)
		line := readme[strings.Index(readme, row):]
		line = line[:strings.Index(line, "\n")]
		g.Expect(line).To(ContainSubstring("| "+def+" |"), "README default of --%s", f.Name)
	})
}

// TestReadmeListsEveryDiffFlag keeps the `convoy diff` table of the configuration reference in
// step with the flags that diff does not share with render.
func TestReadmeListsEveryDiffFlag(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile("../../README.md")
	g.Expect(err).NotTo(HaveOccurred())
	section := string(raw)[strings.Index(string(raw), "`convoy diff` flags"):]
	section = section[:strings.Index(section, "\n\n`convoy diff` exits")]
	render := newRenderCmd().Flags()
	newDiffCmd().Flags().VisitAll(func(f *pflag.Flag) {
		if render.Lookup(f.Name) != nil && f.Name != "revision" {
			g.Expect(section).To(ContainSubstring("`--"+f.Name+"`"), "the shared flag --%s is named", f.Name)
			return
		}
		g.Expect(section).To(ContainSubstring("| `--"+f.Name+"`"), "README lacks a row for convoy diff --%s", f.Name)
	})
}
