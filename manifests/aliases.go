package manifests

import (
	"bytes"
	"fmt"

	yamlv3 "go.yaml.in/yaml/v3"
)

// maxExpandedDocument bounds the size of a document once its YAML aliases are expanded: a
// document without aliases is never larger than its file, so a bigger one is an alias bomb.
const maxExpandedDocument = MaxFileSize

// checkAliasExpansion returns the size of a document with its YAML aliases expanded, and
// refuses it when that exceeds maxExpandedDocument bytes. The YAML library bounds how many
// aliases a document may use, but not how large what they point at is: a 100 KiB string
// referred to a thousand times is 100 MB. Documents without both an anchor and an alias are
// not parsed again: their size is their length.
func checkAliasExpansion(doc document) (int64, *Error) {
	if bytes.IndexByte(doc.data, '&') < 0 || bytes.IndexByte(doc.data, '*') < 0 {
		return int64(len(doc.data)), nil
	}
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(doc.data, &root); err != nil {
		return int64(len(doc.data)), nil // the decoder reports it
	}
	size := max(int64(len(doc.data)), expandedSize(&root, map[*yamlv3.Node]int64{}, 0))
	if size > maxExpandedDocument {
		return size, &Error{File: doc.file, Line: doc.content, Rule: RuleLimit,
			Message: fmt.Sprintf("document expands to more than %d bytes through YAML aliases (an alias bomb)", maxExpandedDocument)}
	}
	return size, nil
}

// expandedSize estimates the size of a node with its aliases expanded, from the length of
// its scalars; sizes memoizes it per node, so that every anchor is measured once. It stops
// counting past maxExpandedDocument.
func expandedSize(n *yamlv3.Node, sizes map[*yamlv3.Node]int64, depth int) int64 {
	if n == nil || depth > 10000 {
		return 0
	}
	if s, ok := sizes[n]; ok {
		return s
	}
	sizes[n] = maxExpandedDocument + 1 // an alias cycle counts as too large
	var size int64
	switch n.Kind {
	case yamlv3.ScalarNode:
		size = int64(len(n.Value)) + 2
	case yamlv3.AliasNode:
		size = expandedSize(n.Alias, sizes, depth+1)
	default:
		for _, c := range n.Content {
			size += expandedSize(c, sizes, depth+1) + 1
			if size > maxExpandedDocument {
				break
			}
		}
	}
	sizes[n] = size
	return size
}
