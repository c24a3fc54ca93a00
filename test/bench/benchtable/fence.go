package benchtable

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The markers around a generated table, each on a line of its own.
const (
	beginMarker = "<!-- bench-table: "
	markerEnd   = " -->"
	endMarker   = "<!-- end bench-table -->"
)

// Fence is one generated table of a page: its spec, its runs and what the page holds between
// its markers.
type Fence struct {
	// Line is the line of the opening marker, from 1.
	Line int
	// Spec is what table the marker asks for.
	Spec Spec
	// Runs are the runs' files as the marker names them, relative to the page's folder.
	Runs []string
	// Body is the page's text between the markers.
	Body string
	// bodyStart and bodyEnd are the byte offsets of Body in the page.
	bodyStart, bodyEnd int
}

// Marker prints the opening marker of a table of spec over runs.
func Marker(spec Spec, runs []string) string {
	return beginMarker + spec.String() + " " + strings.Join(runs, " ") + markerEnd
}

// ParseFences finds the fenced tables of a page; page names it in errors.
func ParseFences(page, text string) ([]Fence, error) {
	var fences []Fence
	var open *Fence
	offset := 0
	for i, line := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, beginMarker):
			if open != nil {
				return nil, fmt.Errorf("%s:%d: a bench-table marker inside the table opened at line %d: close it with %q first", page, i+1, open.Line, endMarker)
			}
			f, err := parseMarker(trimmed)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", page, i+1, err)
			}
			f.Line, f.bodyStart = i+1, offset+len(line)
			open = &f
		case trimmed == endMarker:
			if open == nil {
				return nil, fmt.Errorf("%s:%d: %q without a bench-table marker before it", page, i+1, endMarker)
			}
			open.bodyEnd = offset
			open.Body = text[open.bodyStart:open.bodyEnd]
			fences = append(fences, *open)
			open = nil
		}
		offset += len(line)
	}
	if open != nil {
		return nil, fmt.Errorf("%s:%d: the bench-table marker has no %q after it", page, open.Line, endMarker)
	}
	return fences, nil
}

// parseMarker reads "<!-- bench-table: KIND ARG... FILE.json... -->": words separated by
// spaces, a quoted word may hold spaces, the runs' files end in ".json" and come last.
func parseMarker(line string) (Fence, error) {
	inner, ok := strings.CutSuffix(strings.TrimPrefix(line, beginMarker), markerEnd)
	if !ok {
		return Fence{}, fmt.Errorf("the bench-table marker must end with %q on its line", markerEnd)
	}
	words, err := splitWords(inner)
	if err != nil {
		return Fence{}, fmt.Errorf("bench-table marker: %w", err)
	}
	var f Fence
	for _, w := range words {
		switch {
		case strings.HasSuffix(w, ".json"):
			f.Runs = append(f.Runs, w)
		case len(f.Runs) > 0:
			return Fence{}, fmt.Errorf("bench-table marker: %q after the runs' files: the files (*.json) come last", w)
		case f.Spec.Kind == "":
			f.Spec.Kind = w
		default:
			f.Spec.Args = append(f.Spec.Args, w)
		}
	}
	if f.Spec.Kind == "" || len(f.Runs) == 0 {
		return Fence{}, fmt.Errorf("bench-table marker: want a kind of table and the runs' files, e.g. %q", Marker(Spec{Kind: KindRollout, Args: []string{"n=1000"}}, []string{"runs/x-{1,2,3}.json"}))
	}
	return f, nil
}

// splitWords splits s at spaces; a word in double quotes may hold spaces.
func splitWords(s string) ([]string, error) {
	var words []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] != '"' {
			word, rest, _ := strings.Cut(s, " ")
			words, s = append(words, word), rest
			continue
		}
		quoted, err := strconv.QuotedPrefix(s)
		if err != nil {
			return nil, fmt.Errorf("unterminated quoted word in %q", s)
		}
		word, _ := strconv.Unquote(quoted)
		words, s = append(words, word), s[len(quoted):]
	}
	return words, nil
}

// Generate makes the body a fence should hold, reading its runs relative to dir.
func (f Fence) Generate(dir string) (string, error) {
	set, err := LoadRuns(dir, f.Runs)
	if err != nil {
		return "", err
	}
	return Render(f.Spec, set)
}

// RewriteFile regenerates every fenced table of a page in place and says whether it changed.
func RewriteFile(path string) (bool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	text := string(raw)
	fences, err := ParseFences(path, text)
	if err != nil {
		return false, err
	}
	var out strings.Builder
	last := 0
	for _, f := range fences {
		body, err := f.Generate(filepath.Dir(path))
		if err != nil {
			return false, fmt.Errorf("%s:%d: %w", path, f.Line, err)
		}
		out.WriteString(text[last:f.bodyStart] + body)
		last = f.bodyEnd
	}
	out.WriteString(text[last:])
	if out.String() == text {
		return false, nil
	}
	return true, os.WriteFile(path, []byte(out.String()), 0o644)
}
