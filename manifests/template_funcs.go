package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// forbiddenFunctions are the sprig functions templates may not call: they read the host
// (environment, DNS, clock, time zone, OS path rules) or are not deterministic (random values,
// random salts, IVs and serial numbers), and rendering must be pure.
var forbiddenFunctions = []string{
	"env", "expandenv", "getHostByName",
	"now", "ago", "date", "dateInZone", "date_in_zone", "dateModify", "date_modify",
	"mustDateModify", "must_date_modify", "htmlDate", "htmlDateInZone", "durationRound",
	"toDate", "mustToDate", "unixEpoch",
	"randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt", "shuffle",
	"uuidv4", "bcrypt", "htpasswd", "encryptAES",
	"genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey",
	"genSignedCert", "genSignedCertWithKey",
	"osBase", "osClean", "osDir", "osExt", "osIsAbs",
}

// Bounds on functions whose output size is set by an argument.
const (
	maxListLength = 10000
	maxIndent     = 1024
	// maxIncludeDepth bounds include recursion; text/template's own depth limit does not apply
	// across include calls.
	maxIncludeDepth = 100
)

// errOutputTooLarge is returned when a template writes more than MaxFileSize bytes.
var errOutputTooLarge = fmt.Errorf("template output is larger than %d bytes", MaxFileSize)

// baseFuncs is sprig without the forbidden functions, with size-bounded replacements and
// convoy's own functions; include is bound per render by templateFuncs.
var baseFuncs = func() template.FuncMap {
	funcs := sprig.TxtFuncMap()
	for _, name := range forbiddenFunctions {
		delete(funcs, name)
	}
	funcs["repeat"] = boundedRepeat
	funcs["until"] = func(n int) ([]int, error) { return boundedRange(0, n, 1, false) }
	funcs["untilStep"] = func(start, stop, step int) ([]int, error) { return boundedRange(start, stop, step, false) }
	funcs["seq"] = boundedSeq
	funcs["indent"] = boundedIndent
	funcs["nindent"] = func(spaces int, s string) (string, error) {
		out, err := boundedIndent(spaces, s)
		return "\n" + out, err
	}
	funcs["toYAML"] = toYAML
	funcs["fromYAML"] = fromYAML
	return funcs
}()

// isForbidden reports whether name is a function templates may not call.
func isForbidden(name string) bool {
	return slices.Contains(forbiddenFunctions, name)
}

// templateFuncs returns the functions of one render, with include bound to root.
func templateFuncs(root **template.Template) template.FuncMap {
	funcs := make(template.FuncMap, len(baseFuncs)+1)
	for k, v := range baseFuncs {
		funcs[k] = v
	}
	depth := 0
	funcs["include"] = func(name string, data any) (string, error) {
		if depth >= maxIncludeDepth {
			return "", &includeDepthError{name: name}
		}
		depth++
		defer func() { depth-- }()
		var buf bytes.Buffer
		if err := (*root).ExecuteTemplate(&limitedWriter{w: &buf, n: MaxFileSize}, name, data); err != nil {
			// Report runaway recursion once, not wrapped by every level of it.
			var deep *includeDepthError
			if errors.As(err, &deep) {
				return "", deep
			}
			return "", err
		}
		return buf.String(), nil
	}
	return funcs
}

// includeDepthError is include's error when calls nest more than maxIncludeDepth deep.
type includeDepthError struct {
	name string
}

// Error names the template.
func (e *includeDepthError) Error() string {
	return fmt.Sprintf("include %q: nested more than %d deep", e.name, maxIncludeDepth)
}

// toYAML renders a value as YAML without the trailing newline, for use with nindent.
func toYAML(v any) (string, error) {
	out, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// fromYAML parses a YAML document into a value.
func fromYAML(s string) (any, error) {
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	return v, nil
}

// boundedRepeat is sprig's repeat with a bounded output.
func boundedRepeat(count int, s string) (string, error) {
	if count < 0 || (len(s) > 0 && count > MaxFileSize/len(s)) {
		return "", errOutputTooLarge
	}
	return strings.Repeat(s, count), nil
}

// boundedIndent is sprig's indent with a bounded indentation.
func boundedIndent(spaces int, s string) (string, error) {
	if spaces < 0 || spaces > maxIndent {
		return "", fmt.Errorf("indent %d: want 0 to %d spaces", spaces, maxIndent)
	}
	pad := strings.Repeat(" ", spaces)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad), nil
}

// boundedSeq is sprig's seq (like the Unix command: end, start end, or start step end; the
// end is included) with a bounded length.
func boundedSeq(params ...int) ([]int, error) {
	switch len(params) {
	case 0:
		return nil, nil
	case 1:
		return boundedRange(1, params[0], 1, true)
	case 2:
		step := 1
		if params[1] < params[0] {
			step = -1
		}
		return boundedRange(params[0], params[1], step, true)
	case 3:
		return boundedRange(params[0], params[2], params[1], true)
	}
	return nil, errors.New("seq takes at most three arguments")
}

// boundedRange lists start, start+step, ... up to stop (included when inclusive).
func boundedRange(start, stop, step int, inclusive bool) ([]int, error) {
	if step == 0 {
		return nil, nil
	}
	var out []int
	for v := start; (step > 0 && (v < stop || inclusive && v == stop)) || (step < 0 && (v > stop || inclusive && v == stop)); v += step {
		if len(out) == maxListLength {
			return nil, fmt.Errorf("a list longer than %d items", maxListLength)
		}
		out = append(out, v)
	}
	return out, nil
}

// limitedWriter fails once more than n bytes were written.
type limitedWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

// Write writes p unless that exceeds the limit.
func (l *limitedWriter) Write(p []byte) (int, error) {
	if len(p) > l.n {
		return 0, errOutputTooLarge
	}
	l.n -= len(p)
	return l.w.Write(p)
}
