package clidocs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newTree() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "A tool"}
	sub := &cobra.Command{Use: "run", Short: "Run it", Long: "run runs it.", RunE: func(*cobra.Command, []string) error { return nil }}
	sub.Flags().Int("workers", 4, "Number of workers.")
	hidden := &cobra.Command{Use: "secret", Hidden: true, RunE: func(*cobra.Command, []string) error { return nil }}
	root.AddCommand(sub, hidden)
	return root
}

func TestCommandPagesRendersEveryAvailableCommandWithoutADate(t *testing.T) {
	g := NewWithT(t)
	pages, err := CommandPages(newTree())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pages).To(HaveLen(2))
	g.Expect(pages).To(HaveKey("tool.md"))
	g.Expect(pages["tool_run.md"]).To(HavePrefix(generatedNotice))
	g.Expect(pages["tool_run.md"]).To(ContainSubstring("--workers int   Number of workers. (default 4)"))
	g.Expect(pages["tool_run.md"]).NotTo(ContainSubstring("Auto generated"))
}

func TestFlagTablesEscapeMarkdownAndShowDefaults(t *testing.T) {
	g := NewWithT(t)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("hook", "", "Serve POST /hooks/<name> | nothing.")
	fs.Bool("on", true, "Switch it on.")
	var flags []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) { flags = append(flags, f) })
	table := FlagTables([]FlagGroup{{Title: "Group", Flags: flags}})
	g.Expect(table).To(HavePrefix("## Group\n\n| Flag | Default | Description |\n"))
	g.Expect(table).To(ContainSubstring("`--hook string` | none | Serve POST /hooks/&lt;name&gt; \\| nothing. |"))
	g.Expect(table).To(ContainSubstring("<a id=\"on\"></a>`--on` | `true` | Switch it on. |"))
}

func TestSyncReportsAndFixesMissingDifferingAndStaleFiles(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "tool_old.md"), []byte("old"), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "tool.md"), []byte("stale"), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "other.md"), []byte("not ours"), 0o644)).To(Succeed())
	files := map[string]string{"tool.md": "root", "tool_run.md": "run"}
	owns := func(name string) bool { return strings.HasPrefix(name, "tool") }

	diffs, err := Sync(dir, files, owns, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(diffs).To(HaveLen(3))
	g.Expect(filepath.Join(dir, "tool_old.md")).To(BeAnExistingFile(), "a check writes nothing")

	_, err = Sync(dir, files, owns, true)
	g.Expect(err).NotTo(HaveOccurred())
	diffs, err = Sync(dir, files, owns, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(diffs).To(BeEmpty())
	g.Expect(filepath.Join(dir, "tool_old.md")).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(dir, "other.md")).To(BeAnExistingFile())
}
