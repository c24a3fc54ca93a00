package diff

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// symbols mark an object's action in the text output.
var symbols = map[Action]string{Added: "+", Changed: "~", Removed: "-"}

// WriteText prints the report for a terminal: a header per phase with its counts, a line per
// object, and the unified diff of each changed object indented under it.
func (r *Report) WriteText(w io.Writer) error {
	p := &printer{w: w}
	if r.Empty() {
		p.printf("no differences between %s and %s\n", r.From, r.To)
		return p.err
	}
	added, changed, removed := r.Counts()
	p.printf("%s..%s: %s\n", r.From, r.To, countText(added, changed, removed))
	for _, ph := range r.Phases {
		p.printf("\nphase %s (%s): %s\n", ph.Name, ph.Class, countText(ph.Counts()))
		for _, o := range ph.Objects {
			p.printf("%s %s%s\n", symbols[o.Action], o.Ref(), moved(o))
			if o.Action == Changed {
				p.printf("%s", indent(o.Diff, "    "))
			}
		}
	}
	return p.err
}

// WriteMarkdown prints the report as a pull request comment: a title and the totals, then one
// collapsed <details> block per phase whose summary holds the counts, with one fenced diff per
// object whose content changes. Added and removed objects show their whole YAML.
func (r *Report) WriteMarkdown(w io.Writer) error {
	p := &printer{w: w}
	p.printf("### convoy diff `%s` → `%s`\n\n", code(r.From), code(r.To))
	if r.Empty() {
		p.printf("No object changes.\n")
		return p.err
	}
	added, changed, removed := r.Counts()
	p.printf("%s in %d phase(s).\n\n", countText(added, changed, removed), len(r.Phases))
	p.printf("| Phase | Class | Added | Changed | Removed |\n| --- | --- | ---: | ---: | ---: |\n")
	for _, ph := range r.Phases {
		a, c, d := ph.Counts()
		p.printf("| `%s` | %s | %d | %d | %d |\n", code(ph.Name), ph.Class, a, c, d)
	}
	for _, ph := range r.Phases {
		p.printf("\n<details>\n<summary>Phase <code>%s</code> (%s): %s</summary>\n\n",
			html.EscapeString(ph.Name), ph.Class, countText(ph.Counts()))
		for _, o := range ph.Objects {
			p.printf("**%s** `%s`%s\n\n", o.Action, code(o.Ref()), moved(o))
			if o.Diff != "" {
				fence := fenceFor(o.Diff)
				p.printf("%sdiff\n%s%s\n\n", fence, withNewline(o.Diff), fence)
			}
		}
		p.printf("</details>\n")
	}
	return p.err
}

// printer writes formatted text and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// countText says "1 added, 2 changed, 0 removed".
func countText(added, changed, removed int) string {
	return fmt.Sprintf("%d added, %d changed, %d removed", added, changed, removed)
}

// moved notes an object's change of phase, and its note.
func moved(o ObjectDiff) string {
	s := ""
	if o.MovedFrom != "" {
		s += " (moved from phase " + o.MovedFrom + ")"
	}
	if o.Note != "" {
		s += " (" + o.Note + ")"
	}
	return s
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	lines := strings.SplitAfter(withNewline(s), "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}

// withNewline ends s with a newline.
func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// fenceFor returns a backtick fence longer than any run of backticks in s, so that no content
// closes it.
func fenceFor(s string) string {
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// code makes s safe inside a one-backtick code span.
func code(s string) string { return strings.ReplaceAll(s, "`", "'") }
