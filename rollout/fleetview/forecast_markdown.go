package fleetview

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown prints the forecast as a pull request comment: a title with the revision, the
// strategy, a table of the batches (one row per Package change, in rollout order), when each
// partition can start (when a gate holds one), the order of the dependencies and the Packages
// that wait for one, a table of the skipped HostedClusters and why, and the outcome.
func (f *Forecast) WriteMarkdown(w io.Writer) error {
	p := &mdPrinter{w: w}
	p.printf("### convoy plan: HostedClusterPackage `%s`\n\n", mdCode(f.Name))
	p.printf("- **Revision:** %s, from %s\n", mdCell(f.Revision.text("")), mdCell(f.From.text("none (first rollout)")))
	p.printf("- **Strategy:** %s\n", mdCell(f.Strategy))
	p.printf("- **Already updated:** %d\n", f.AlreadyUpdated)
	if pf := f.Promotion; pf != nil {
		p.printf("- **Promotion:** commit `%s` %s\n", shortID(pf.Commit), mdCell(f.promotionStartText()))
		for _, s := range pf.Sectors {
			p.printf("  - %s\n", mdCell(s))
		}
	}
	if len(f.Batches) > 0 {
		p.printf("\n#### Batches\n\n| Batch | Partition | HostedCluster | Action | Revision | Reason |\n|---:|---|---|---|---|---|\n")
		for i, b := range f.Batches {
			for _, s := range b.Steps {
				p.printf("| %d | %s | %s | %s | %s | %s |\n", i+1, mdCell(s.Partition), mdCell(s.HostedCluster),
					mdCell(s.Action), mdCell(s.Revision), mdCell(string(s.Reason)))
			}
		}
	}
	f.writeMarkdownPartitions(p)
	f.writeMarkdownDependencies(p)
	if len(f.Ineligible) > 0 {
		p.printf("\n#### Skipped HostedClusters\n\nKept as they are until they become eligible.\n\n" +
			"| HostedCluster | Partition | Reason | Message |\n|---|---|---|---|\n")
		for _, t := range f.Ineligible {
			p.printf("| %s | %s | %s | %s |\n", mdCell(t.HostedCluster), mdCell(t.Partition), mdCell(t.Reason), mdCell(t.Message))
		}
	}
	switch {
	case f.Blocked != "":
		p.printf("\n**The rollout would stop:** %s\n", mdCell(f.Blocked))
	case len(f.Batches) == 0:
		p.printf("\nNothing to do: every eligible HostedCluster is on the revision.\n")
	default:
		p.printf("\n%d batches; every eligible HostedCluster ends on the revision.\n", len(f.Batches))
	}
	return p.err
}

// writeMarkdownPartitions lists when each partition can start and what it waits for, when a
// gate holds one. Note: a list, not a table, so that the tables keep one row per change.
func (f *Forecast) writeMarkdownPartitions(p *mdPrinter) {
	if len(f.Partitions) == 0 {
		return
	}
	p.printf("\n#### Partitions\n\n%s\n\n", mdCell(f.startsTitle()))
	for _, part := range f.Partitions {
		line := fmt.Sprintf("- **%s**: %s", mdCell(part.Name), mdCell(f.startText(part)))
		if len(part.Waits) > 0 {
			line += "; " + mdCell(waitsText(part.Waits))
		}
		if len(part.Checks) > 0 {
			line += "; checks " + mdCell(checksText(part.Checks))
		}
		p.printf("%s\n", line)
	}
}

// writeMarkdownDependencies lists the order in which each HostedCluster gets the
// HostedClusterPackages, level by level, and a table of the Packages that wait for a dependency
// in the first pass, as WriteText does.
func (f *Forecast) writeMarkdownDependencies(p *mdPrinter) {
	if len(f.Order) > 0 {
		p.printf("\n#### Order on each HostedCluster\n\nA level installs or moves once the levels before it are available.\n\n")
		for i, level := range f.Order {
			names := make([]string, len(level))
			for j, name := range level {
				names[j] = "`" + mdCode(name) + "`"
			}
			p.printf("%d. %s\n", i+1, strings.Join(names, ", "))
		}
	}
	if len(f.Waiting) > 0 {
		p.printf("\n#### Waiting for dependencies\n\nHeld until what they wait for is available; the forecast holds dependencies as they are now.\n\n" +
			"| HostedCluster | Partition | Waits for | Reason | Message |\n|---|---|---|---|---|\n")
		for _, w := range f.Waiting {
			p.printf("| %s | %s | %s | %s | %s |\n", mdCell(w.HostedCluster), mdCell(w.Partition), mdCell(w.Dependency),
				mdCell(w.Reason), mdCell(w.Message))
		}
	}
}

// mdPrinter writes formatted text and keeps the first error.
type mdPrinter struct {
	w   io.Writer
	err error
}

func (p *mdPrinter) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// mdCellEscaper keeps text inside one table cell and out of Markdown and HTML syntax.
var mdCellEscaper = strings.NewReplacer("|", `\|`, "\r", " ", "\n", " ", "<", "&lt;", ">", "&gt;",
	"*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`)

// mdCell escapes s for a table cell or a line of prose.
func mdCell(s string) string { return mdCellEscaper.Replace(s) }

// mdCode makes s safe inside a one-backtick code span.
func mdCode(s string) string { return strings.ReplaceAll(s, "`", "'") }
