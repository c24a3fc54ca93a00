package checks

import (
	"errors"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
)

// MaxRenderedBytes bounds what a template renders: a range nested in a range over a large
// partition stops there instead of filling memory.
const MaxRenderedBytes = 64 << 10

// templateRule is the rule a template breaks, as a SpecError states it.
const templateRule = "must be a Go template over {HostedClusterPackage, Partition, Revision, Commit, " +
	"HostedClusters[]{Name, Namespace, HCPNamespace, Labels}} with only the functions names and regex"

// noMatchRegex matches no string at all: what regex renders for an empty list, so that an
// empty partition never turns into a matcher that selects series lacking the label.
const noMatchRegex = `[^\x00-\x{10FFFF}]`

// templateFuncs are the only functions a template may call.
var templateFuncs = template.FuncMap{
	"names": clusterNames,
	"regex": alternation,
}

// clusterNames returns the names of clusters, in order.
func clusterNames(clusters []HostedCluster) []string {
	out := make([]string, 0, len(clusters))
	for _, c := range clusters {
		out = append(out, c.Name)
	}
	return out
}

// alternation returns items as a regular expression that matches exactly one of them, joined
// with "|" in a non-capturing group so that it stays one alternation when anchored or embedded.
// An empty list matches nothing.
//
// Note: each item is quoted as regexp.QuoteMeta quotes it, but with a metacharacter in a
// character class ("[.]") rather than after a backslash wherever a class can hold it alone:
// PromQL refuses "\." in a double-quoted string, and names and label values hold dots. Only ^
// and \, which Kubernetes allows in no name or label value, keep their backslash.
func alternation(items []string) string {
	if len(items) == 0 {
		return noMatchRegex
	}
	quoted := make([]string, 0, len(items))
	for _, it := range items {
		quoted = append(quoted, quoteLiteral(it))
	}
	return "(?:" + strings.Join(quoted, "|") + ")"
}

// quoteLiteral returns a regular expression that matches s literally.
func quoteLiteral(s string) string {
	var sb strings.Builder
	for _, r := range s {
		switch {
		case r == '^' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case strings.ContainsRune(".+*?()|[]{}$", r):
			sb.WriteByte('[')
			sb.WriteRune(r)
			sb.WriteByte(']')
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// tmpl is a parsed template of one field.
type tmpl struct {
	field string
	text  string
	t     *template.Template
}

// parseTemplate parses text as the template of field, refusing any function but names and
// regex (text/template's builtins included).
func parseTemplate(field, text string) (*tmpl, error) {
	t, err := template.New(field).Option("missingkey=error").Funcs(templateFuncs).Parse(text)
	if err != nil {
		return nil, specError(field, templateRule, err)
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if name := forbiddenFunction(tt.Root); name != "" {
			return nil, specError(field, templateRule, fmt.Errorf("calls the function %q", name))
		}
	}
	return &tmpl{field: field, text: text, t: t}, nil
}

// render executes the template with data.
func (t *tmpl) render(data Data) (string, error) {
	w := &limitedWriter{max: MaxRenderedBytes}
	if err := t.t.Execute(w, data); err != nil {
		if errors.Is(err, errRenderedTooLong) {
			return "", specError(t.field, templateRule, fmt.Errorf("renders more than %d bytes", MaxRenderedBytes))
		}
		return "", specError(t.field, templateRule, err)
	}
	return w.sb.String(), nil
}

// forbiddenFunction returns the first function node calls that is not names or regex, or "".
func forbiddenFunction(node parse.Node) string {
	switch n := node.(type) {
	case *parse.IdentifierNode:
		if _, ok := templateFuncs[n.Ident]; !ok {
			return n.Ident
		}
	case *parse.ListNode:
		return firstForbidden(n.Nodes...)
	case *parse.ActionNode:
		return forbiddenFunction(n.Pipe)
	case *parse.PipeNode:
		if n == nil {
			return ""
		}
		for _, c := range n.Cmds {
			if name := firstForbidden(c.Args...); name != "" {
				return name
			}
		}
	case *parse.ChainNode:
		return forbiddenFunction(n.Node)
	case *parse.IfNode:
		return forbiddenInBranch(&n.BranchNode)
	case *parse.RangeNode:
		return forbiddenInBranch(&n.BranchNode)
	case *parse.WithNode:
		return forbiddenInBranch(&n.BranchNode)
	case *parse.TemplateNode:
		return forbiddenFunction(n.Pipe)
	}
	return ""
}

// forbiddenInBranch checks the pipeline and both lists of an if, range or with.
func forbiddenInBranch(b *parse.BranchNode) string {
	if name := forbiddenFunction(b.Pipe); name != "" {
		return name
	}
	if b.List != nil {
		if name := forbiddenFunction(b.List); name != "" {
			return name
		}
	}
	if b.ElseList != nil {
		return forbiddenFunction(b.ElseList)
	}
	return ""
}

// firstForbidden returns the first forbidden function among nodes.
func firstForbidden(nodes ...parse.Node) string {
	for _, n := range nodes {
		if name := forbiddenFunction(n); name != "" {
			return name
		}
	}
	return ""
}

// errRenderedTooLong stops a template that renders more than its bound.
var errRenderedTooLong = errors.New("rendered text too long")

// limitedWriter collects at most max bytes and then fails every write.
type limitedWriter struct {
	sb  strings.Builder
	max int
}

// Write implements io.Writer.
func (w *limitedWriter) Write(p []byte) (int, error) {
	if w.sb.Len()+len(p) > w.max {
		return 0, errRenderedTooLong
	}
	return w.sb.Write(p)
}
