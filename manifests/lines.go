package manifests

import (
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// lineIndex maps field paths of a YAML document ("spec.phases[1].name",
// `metadata.annotations["convoy.dev/phase"]` is written metadata.annotations.convoy.dev/phase)
// to their 1-based line in the document.
type lineIndex map[string]int

// indexLines parses data and records the line of every mapping key and sequence item. It
// returns an empty index when data does not parse.
func indexLines(data []byte) lineIndex {
	idx := lineIndex{}
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(data, &root); err != nil {
		return idx
	}
	idx.walk(&root, "", 0)
	return idx
}

// maxIndexDepth bounds recursion on pathological documents.
const maxIndexDepth = 64

// walk records the lines below node, whose path is prefix.
func (idx lineIndex) walk(node *yamlv3.Node, prefix string, depth int) {
	if depth > maxIndexDepth {
		return
	}
	switch node.Kind {
	case yamlv3.DocumentNode:
		for _, c := range node.Content {
			idx.walk(c, prefix, depth+1)
		}
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(node.Content); i += 2 {
			p := joinPath(prefix, node.Content[i].Value)
			if _, seen := idx[p]; !seen {
				idx[p] = node.Content[i].Line
			}
			idx.walk(node.Content[i+1], p, depth+1)
		}
	case yamlv3.SequenceNode:
		for i, c := range node.Content {
			p := prefix + "[" + strconv.Itoa(i) + "]"
			idx[p] = c.Line
			idx.walk(c, p, depth+1)
		}
	}
}

// joinPath appends a field to a path.
func joinPath(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + "." + field
}

// line returns the line of path, or of its closest indexed ancestor, or 0.
func (idx lineIndex) line(path string) int {
	for path != "" {
		if l, ok := idx[path]; ok {
			return l
		}
		cut := max(strings.LastIndexAny(path, ".["), 0)
		path = path[:cut]
	}
	return 0
}

// fieldLine returns the absolute line of a field of an object, or the object's own line when
// the field cannot be located.
func (o *object) fieldLine(path string) int {
	if o.doc == nil || o.docLine == 0 {
		return o.line
	}
	if l := indexLines(o.doc).line(path); l > 0 {
		return o.docLine + l - 1
	}
	return o.line
}
