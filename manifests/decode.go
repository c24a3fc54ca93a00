package manifests

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// document is one YAML document of a file.
type document struct {
	// file is the path relative to the package directory.
	file string
	// line is the 1-based line in file of the document's first line of text.
	line int
	// content is the line of the document's first line that is not blank or a comment.
	content int
	// data is the document's text.
	data []byte
}

// object is a decoded object and where it came from.
type object struct {
	u *unstructured.Unstructured
	// file and line locate the object (the first line of its document that is not blank or
	// a comment); line is 0 when unknown.
	file string
	line int
	// doc is the document's text, kept to locate fields when reporting an error, and docLine
	// the line of its first line in file; doc is nil when the object was not read from a file.
	doc     []byte
	docLine int
	// conditionMap is the object's Package Operator condition-map, read by assignPhases.
	conditionMap []ConditionMapping
}

// splitDocuments splits a multi-document YAML stream at "---" (and "...") lines.
func splitDocuments(file string, data []byte) []document {
	var docs []document
	forEachDocument(file, data, func(d document) bool {
		docs = append(docs, d)
		return true
	})
	return docs
}

// forEachDocument calls fn with each document of a multi-document YAML stream, split at "---"
// (and "...") lines, as it finds them, until fn returns false. Documents that hold only blank
// lines and comments are skipped.
func forEachDocument(file string, data []byte, fn func(document) bool) {
	start, startLine := 0, 1
	line := 1
	for pos := 0; pos < len(data); line++ {
		next := len(data)
		if end := bytes.IndexByte(data[pos:], '\n'); end >= 0 {
			next = pos + end + 1
		}
		if rest, ok := separatorRest(data[pos:next]); ok {
			if d, ok := newDocument(file, startLine, data[start:pos]); ok && !fn(d) {
				return
			}
			start, startLine = next, line+1
			if rest >= 0 {
				// Content on the separator line ("--- {a: b}") belongs to the new document.
				start, startLine = pos+rest, line
			}
		}
		pos = next
	}
	if d, ok := newDocument(file, startLine, data[start:]); ok {
		fn(d)
	}
}

// separatorRest reports whether a line is a document separator, and returns the offset in the
// line of the content that follows "---" on it, or -1.
func separatorRest(line []byte) (int, bool) {
	trimmed := bytes.TrimRight(line, " \t\r\n")
	if bytes.Equal(trimmed, []byte("...")) {
		return -1, true
	}
	if !bytes.HasPrefix(trimmed, []byte("---")) {
		return -1, false
	}
	if len(trimmed) == 3 {
		return -1, true
	}
	if trimmed[3] != ' ' && trimmed[3] != '\t' {
		return -1, false
	}
	rest := bytes.TrimLeft(trimmed[3:], " \t")
	if len(rest) == 0 || rest[0] == '#' {
		return -1, true
	}
	return len(trimmed) - len(rest), true
}

// newDocument returns the document of data, unless it holds only blank lines and comments.
func newDocument(file string, line int, data []byte) (document, bool) {
	rest := data
	for i := 0; len(rest) > 0; i++ {
		l := rest
		if end := bytes.IndexByte(rest, '\n'); end >= 0 {
			l, rest = rest[:end], rest[end+1:]
		} else {
			rest = nil
		}
		if l = bytes.TrimSpace(l); len(l) > 0 && l[0] != '#' {
			return document{file: file, line: line, content: line + i, data: data}, true
		}
	}
	return document{}, false
}

// yamlLineRE finds the line number in a YAML parser error.
var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// decodeDocument decodes a document into objects: one, or the items of a v1 List. It returns
// nil for a document that holds only null.
func decodeDocument(doc document) ([]*object, *Error) {
	if _, err := checkAliasExpansion(doc); err != nil {
		return nil, err
	}
	return decodeChecked(doc, false)
}

// decodeChecked is decodeDocument once the document's alias expansion was checked; dupKeys
// accepts a mapping that repeats a key, the last value winning.
func decodeChecked(doc document, dupKeys bool) ([]*object, *Error) {
	convert := yaml.YAMLToJSONStrict
	if dupKeys {
		convert = yaml.YAMLToJSON
	}
	j, err := convert(doc.data)
	if err != nil {
		return nil, yamlError(doc, err)
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return nil, nil
	}
	var m map[string]any
	if err := utiljson.Unmarshal(j, &m); err != nil || m == nil {
		return nil, &Error{File: doc.file, Line: doc.content, Rule: RuleInvalidYAML, Message: "document is not an object (a YAML mapping)"}
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetAPIVersion() == "v1" && u.GetKind() == "List" {
		return decodeList(doc, m)
	}
	return []*object{{u: u, file: doc.file, line: doc.content, doc: doc.data, docLine: doc.line}}, nil
}

// decodeList expands the items of a v1 List.
func decodeList(doc document, m map[string]any) ([]*object, *Error) {
	items, ok := m["items"].([]any)
	if !ok && m["items"] != nil {
		return nil, &Error{File: doc.file, Line: doc.content, Rule: RuleInvalidYAML, Message: "List items is not a list"}
	}
	out := make([]*object, 0, len(items))
	for i, item := range items {
		im, ok := item.(map[string]any)
		if !ok {
			return nil, &Error{File: doc.file, Line: doc.content, Rule: RuleInvalidYAML, Message: fmt.Sprintf("List item %d is not an object", i)}
		}
		out = append(out, &object{u: &unstructured.Unstructured{Object: im}, file: doc.file, line: doc.content})
	}
	return out, nil
}

// yamlError turns a YAML parser error into an Error at the absolute line it names.
func yamlError(doc document, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	line := doc.content
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil && n > 0 {
			line = doc.line + n - 1
			msg = strings.Replace(msg, m[0], "line "+strconv.Itoa(line), 1)
		}
	}
	return &Error{File: doc.file, Line: line, Rule: RuleInvalidYAML, Message: msg}
}

// maxDecodedBytes bounds the size of all documents of a package once their aliases are
// expanded (twice MaxPackageSize, so that the text of a package within it always fits).
const maxDecodedBytes = 2 * MaxPackageSize

// decoder decodes the documents of a package, counting them and their expanded size across
// files: past MaxObjects documents or maxDecodedBytes it records one RuleLimit error and decodes
// nothing more, so that a package of countless tiny documents, or of many alias-laden ones,
// fails before it fills memory.
type decoder struct {
	errs      *errorList
	documents int
	bytes     int64
	stopped   bool
	// lenient accepts a mapping that repeats a key (the last value wins), with a warning, as
	// Package Operator does; otherwise it is an error.
	lenient bool
}

// decodeFile splits and decodes a file, recording decode errors and continuing with the next
// document, until the document limit.
func (d *decoder) decodeFile(file string, data []byte) []*object {
	var objs []*object
	forEachDocument(file, data, func(doc document) bool {
		if d.documents++; d.documents > MaxObjects {
			d.errs.add(doc.file, doc.content, RuleLimit, "the package has more than %d documents; the rest was not read", MaxObjects)
			d.stopped = true
		}
		if d.stopped {
			return false
		}
		size, err := checkAliasExpansion(doc)
		if d.bytes += size; d.bytes > maxDecodedBytes {
			d.errs.add(doc.file, doc.content, RuleLimit, "the package's documents expand to more than %d bytes; the rest was not read", maxDecodedBytes)
			d.stopped = true
			return false
		}
		decoded := []*object(nil)
		if err == nil {
			decoded, err = d.decode(doc)
		}
		if err != nil {
			d.errs.errs = append(d.errs.errs, err)
			return true
		}
		objs = append(objs, decoded...)
		return true
	})
	return objs
}

// decode decodes a document whose alias expansion was checked; a lenient decoder accepts a
// repeated key with a warning.
func (d *decoder) decode(doc document) ([]*object, *Error) {
	objs, err := decodeChecked(doc, false)
	if err == nil || !d.lenient || !strings.Contains(err.Message, "already set in map") {
		return objs, err
	}
	d.errs.warn(err.File, err.Line, RuleDuplicateKey, "%s; the last value is used, as Package Operator does", err.Message)
	return decodeChecked(doc, true)
}

// DecodeObjects decodes a multi-document YAML (or JSON) stream into objects, as Load reads the
// files of a package: documents that hold only null are skipped and v1 Lists are expanded. Its
// errors are Errors naming file and line.
func DecodeObjects(file string, data []byte) ([]*unstructured.Unstructured, error) {
	errs := &errorList{}
	objs := (&decoder{errs: errs}).decodeFile(file, data)
	if err := errs.err(); err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.u
	}
	return out, nil
}
