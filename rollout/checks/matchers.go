package checks

import (
	"fmt"
	"regexp"
	"strings"
)

// matcherRule is the rule a matcher breaks, as a SpecError states it.
const matcherRule = `must be an Alertmanager matcher: label="value", label!="value", label=~"regex" or label!~"regex"`

// matcherPattern is the strict form of a matcher: a label name, an operator and a quoted value
// in which \" and \\ are the escapes.
var matcherPattern = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$`)

// matcher is a parsed Alertmanager matcher.
type matcher struct {
	name  string
	op    string
	value string
	re    *regexp.Regexp // anchored, for =~ and !~
}

// parseMatcher parses text strictly; field names it in an error.
func parseMatcher(field, text string) (*matcher, error) {
	m := matcherPattern.FindStringSubmatch(text)
	if m == nil {
		return nil, specError(field, matcherRule, fmt.Errorf("%q does not parse", text))
	}
	out := &matcher{name: m[1], op: m[2], value: unescapeMatcherValue(m[3])}
	if out.op == "=~" || out.op == "!~" {
		re, err := regexp.Compile("^(?:" + out.value + ")$")
		if err != nil {
			return nil, specError(field, matcherRule, fmt.Errorf("%q: %w", text, err))
		}
		out.re = re
	}
	return out, nil
}

// unescapeMatcherValue undoes \" \\ and \n, and keeps any other backslash as it is (so that a
// regexp's \. survives), as Alertmanager's classic matcher parser does.
func unescapeMatcherValue(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			sb.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case '"', '\\':
			sb.WriteByte(s[i])
		case 'n':
			sb.WriteByte('\n')
		default:
			sb.WriteByte('\\')
			sb.WriteByte(s[i])
		}
	}
	return sb.String()
}

// String writes the matcher in the canonical form both of Alertmanager's parsers read alike:
// the value quoted with \\, \" and \n escaped.
func (m *matcher) String() string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return m.name + m.op + `"` + r.Replace(m.value) + `"`
}

// matches reports whether labels satisfy the matcher; a missing label is the empty value.
func (m *matcher) matches(labels map[string]string) bool {
	v := labels[m.name]
	switch m.op {
	case "=":
		return v == m.value
	case "!=":
		return v != m.value
	case "=~":
		return m.re.MatchString(v)
	default:
		return !m.re.MatchString(v)
	}
}
