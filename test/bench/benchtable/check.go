package benchtable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Pages returns the pages whose tables are published figures: README.md and
// docs/evidence/*.md under root, relative to it.
func Pages(root string) ([]string, error) {
	evidence, err := filepath.Glob(filepath.Join(root, "docs", "evidence", "*.md"))
	if err != nil {
		return nil, err
	}
	pages := []string{"README.md"}
	for _, p := range evidence {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, err
		}
		pages = append(pages, filepath.ToSlash(rel))
	}
	return pages, nil
}

// CheckFile regenerates every fenced table of the page at root/page and returns an error for
// each that differs from what the page publishes, and for each target verdict published
// outside a fence (Unbacked).
func CheckFile(root, page string) error {
	raw, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		return err
	}
	text := string(raw)
	fences, err := ParseFences(page, text)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range fences {
		want, err := f.Generate(filepath.Join(root, filepath.Dir(page)))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", page, f.Line, err))
			continue
		}
		if f.Body != want {
			errs = append(errs, differs(page, f, want))
		}
	}
	return errors.Join(append(errs, Unbacked(page, text)...)...)
}

// differs explains the first line where a fence's body is not what its runs give: a target
// verdict the runs do not back, or any other figure.
func differs(page string, f Fence, want string) error {
	got, wantLines := strings.Split(f.Body, "\n"), strings.Split(want, "\n")
	for i := range max(len(got), len(wantLines)) {
		g, w := lineAt(got, i), lineAt(wantLines, i)
		if g == w {
			continue
		}
		line := f.Line + 1 + i
		if gm, wm := verdicts(wantLines, g, w); gm != wm {
			return fmt.Errorf("%s:%d: the row says met %q where its runs (%s) say %q: a verdict comes from the runs' JSON, not by hand",
				page, line, gm, strings.Join(f.Runs, " "), wm)
		}
		return fmt.Errorf("%s:%d: the table differs from its runs (%s): the page has\n\t%s\nthe runs give\n\t%s\nrun `make bench-tables` to regenerate it, and change figures only through the runs' JSON",
			page, line, strings.Join(f.Runs, " "), g, w)
	}
	return nil
}

// lineAt returns lines[i], or "" past the end.
func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return ""
}

// verdicts returns the met cells of a published row and the generated one, in a Markdown
// table or in a run's text table (its MET column, up to NOTE); "" and "" when the rows have
// none.
func verdicts(generated []string, got, want string) (string, string) {
	if col := metColumn(generated); col >= 0 && strings.HasPrefix(want, "|") && strings.HasPrefix(got, "|") {
		return cellAt(got, col), cellAt(want, col)
	}
	for _, header := range generated {
		start, end := headerColumn(header, "MET"), headerColumn(header, "NOTE")
		if !strings.HasPrefix(header, "SCENARIO ") || start < 0 {
			continue
		}
		if end < start {
			end = len(header)
		}
		return textColumn(got, start, end), textColumn(want, start, end)
	}
	return "", ""
}

// headerColumn returns where the column named name starts in a text table's header, or -1.
func headerColumn(header, name string) int {
	for i, f := range strings.Fields(header) {
		if f == name && i > 0 {
			return strings.Index(header+" ", " "+name+" ") + 1
		}
	}
	return -1
}

// textColumn returns the runes from start to end of an aligned text row, trimmed (the header
// is ASCII, so its byte offsets are the columns' rune offsets).
func textColumn(row string, start, end int) string {
	r := []rune(row)
	if start >= len(r) {
		return ""
	}
	return strings.TrimSpace(string(r[start:min(end, len(r))]))
}

// metColumn returns the index of the "met" column of the first table in lines, or -1.
func metColumn(lines []string) int {
	for _, l := range lines {
		if strings.HasPrefix(l, "|") {
			for i, c := range cells(l) {
				if strings.EqualFold(c, "met") {
					return i
				}
			}
			return -1
		}
	}
	return -1
}

// cells splits a Markdown table row into its trimmed cells.
func cells(row string) []string {
	parts := strings.Split(strings.Trim(strings.TrimSpace(row), "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// cellAt returns cell i of a row, or "".
func cellAt(row string, i int) string {
	return lineAt(cells(row), i)
}

var (
	// verdictWord is a target verdict in a cell: "yes", or "NO" in capitals ("no objects" is a
	// target, not a verdict).
	verdictWord = regexp.MustCompile(`(?i:\byes\b)|\bNO\b`)
	// targetHeader is the header of a column of targets or verdicts.
	targetHeader = regexp.MustCompile(`(?i)\b(target|met)\b`)
)

// Unbacked returns an error for each target verdict the page publishes outside a fence: a
// "yes" or "NO" in a Markdown table's target or met column, or a bench run's table with
// TARGET and MET columns in a code block. Outside a fence no run's JSON backs it.
func Unbacked(page, text string) []error {
	var errs []error
	inFence, inCode := false, false
	var header []string
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, beginMarker):
			inFence = true
		case trimmed == endMarker:
			inFence = false
		case strings.HasPrefix(trimmed, "```"):
			inCode = !inCode
		}
		if inFence {
			continue
		}
		if inCode {
			f := strings.Fields(line)
			if len(f) > 0 && f[0] == "SCENARIO" && strings.Contains(line, " TARGET ") && strings.Contains(line, " MET") {
				errs = append(errs, fmt.Errorf("%s:%d: a bench run's table with targets outside a bench-table fence: publish it from the run's JSON or drop its TARGET and MET columns", page, i+1))
			}
			continue
		}
		header = unbackedInRow(page, i+1, trimmed, header, &errs)
	}
	return errs
}

// unbackedInRow checks one line of Markdown against the header of the table it is in, and
// returns the header for the next line: the line itself when it starts a table.
func unbackedInRow(page string, line int, row string, header []string, errs *[]error) []string {
	if !strings.HasPrefix(row, "|") {
		return nil
	}
	if header == nil {
		return cells(row)
	}
	for i, c := range cells(row) {
		if i < len(header) && targetHeader.MatchString(header[i]) && verdictWord.MatchString(c) {
			*errs = append(*errs, fmt.Errorf("%s:%d: the verdict %q in the column %q is outside a bench-table fence: no run's JSON backs it; generate the table from its runs, or state the target without a verdict",
				page, line, c, header[i]))
		}
	}
	return header
}

// readPage reads root/page.
func readPage(root, page string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(root, page))
	return string(raw), err
}
