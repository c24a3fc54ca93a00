package manifests

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Rule names the rule a package broke; it is part of every Error's text.
type Rule string

// Rules a package directory can break.
const (
	// RuleLimit: a file, a template output or the package exceeds a size or count limit.
	RuleLimit Rule = "limit"
	// RuleMissingManifest: the directory has no manifest.yaml.
	RuleMissingManifest Rule = "missing-manifest"
	// RuleInvalidManifest: manifest.yaml does not parse or breaks a manifest rule.
	RuleInvalidManifest Rule = "invalid-manifest"
	// RuleUnsupported: the package uses a Package Operator feature convoy does not support.
	RuleUnsupported Rule = "unsupported"
	// RuleScope: the package is installed with a scope its spec.scopes does not list.
	RuleScope Rule = "scope"
	// RuleInvalidYAML: a file is not valid YAML, or a document is not an object.
	RuleInvalidYAML Rule = "invalid-yaml"
	// RuleMissingField: an object lacks apiVersion, kind or metadata.name.
	RuleMissingField Rule = "missing-field"
	// RuleMissingPhase: an object has no phase annotation.
	RuleMissingPhase Rule = "missing-phase"
	// RuleUnknownPhase: an object names a phase the manifest does not declare.
	RuleUnknownPhase Rule = "unknown-phase"
	// RuleDuplicateObject: two objects share group, kind, namespace and name.
	RuleDuplicateObject Rule = "duplicate-object"
	// RuleTemplate: a template does not parse or fails to execute.
	RuleTemplate Rule = "template"
	// RuleForbiddenFunction: a template calls a function that reaches the host or is not
	// deterministic.
	RuleForbiddenFunction Rule = "forbidden-function"
	// RuleKustomize: the kustomization fails to build.
	RuleKustomize Rule = "kustomize"
	// RuleKustomizeOutside: the kustomization refers to something outside the package
	// directory (a parent directory, an absolute path, a remote base or a URL).
	RuleKustomizeOutside Rule = "kustomize-outside-package"
	// RuleSymlinkOutside: a symlink leads outside the package directory (an absolute target,
	// or one that climbs above the directory).
	RuleSymlinkOutside Rule = "symlink-outside-package"
	// RuleConfigSchema: spec.config.openAPIV3Schema is not a valid structural schema.
	RuleConfigSchema Rule = "config-schema"
	// RuleConfig: the config does not match the manifest's schema.
	RuleConfig Rule = "config"
	// RuleProbe: an availability probe is malformed or its CEL rule does not compile.
	RuleProbe Rule = "probe"
	// RuleLockFile: Package Operator's manifest.lock.yaml is missing, malformed or disagrees
	// with spec.images.
	RuleLockFile Rule = "lock-file"
	// RuleObjectMetadata: an object's metadata (labels, annotations, name) is not valid.
	RuleObjectMetadata Rule = "object-metadata"
	// RuleTestFixture: a test.template case renders differently from its .test-fixtures.
	RuleTestFixture Rule = "test-fixture"
	// RuleFilter: a Package Operator filter (spec.filter or the package-operator.run/condition
	// annotation) is malformed or its CEL expression fails.
	RuleFilter Rule = "filter"
	// RuleComponent: a multi-component package is malformed, or the selected component does
	// not exist.
	RuleComponent Rule = "component"
	// RuleDuplicateKey: a mapping repeats a key (a warning for Package Operator packages,
	// whose last value wins as in Package Operator).
	RuleDuplicateKey Rule = "duplicate-key"
)

// Error is one problem found in a package directory.
type Error struct {
	// File is the path of the file relative to the package directory.
	File string
	// Line is the 1-based line in File, 0 when unknown. For templates it is the line of the
	// rendered output unless the template engine reported its own.
	Line int
	// Rule is the rule broken.
	Rule Rule
	// Message describes the problem.
	Message string
}

// Error formats the problem on one line as "file:line: rule: message" (the line is left out
// when unknown; runs of white space in the message, newlines included, become one space).
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(cmp.Or(e.File, "<package>"))
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	fmt.Fprintf(&b, ": %s: %s", e.Rule, strings.Join(strings.Fields(e.Message), " "))
	return b.String()
}

// Errors is every problem a Load found: limits first (they say why the rest may be incomplete,
// and stay visible when the list is cut short), then sorted by file and line.
type Errors []*Error

// MaxListedErrors is the number of problems Errors.Error lists; the rest are counted.
const MaxListedErrors = 20

// Error lists the problems one per line, the first MaxListedErrors of them, then "… and N
// more problems" when there are more, so that it fits in a condition message. Range over the
// Errors for every one.
func (es Errors) Error() string {
	n := min(len(es), MaxListedErrors)
	lines := make([]string, n, n+1)
	for i, e := range es[:n] {
		lines[i] = e.Error()
	}
	if rest := len(es) - n; rest > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more problems", rest))
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, so that errors.As finds each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// rank orders limit problems before the others.
func rank(e *Error) int {
	if e.Rule == RuleLimit {
		return 0
	}
	return 1
}

// errorList collects problems while loading.
type errorList struct {
	errs Errors
	// warnings are problems that do not fail the load.
	warnings Errors
}

// warn records a problem that does not fail the load.
func (l *errorList) warn(file string, line int, rule Rule, format string, args ...any) {
	l.warnings = append(l.warnings, &Error{File: file, Line: line, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// add records a problem.
func (l *errorList) add(file string, line int, rule Rule, format string, args ...any) {
	l.errs = append(l.errs, &Error{File: file, Line: line, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// err returns the sorted problems, or nil when there are none.
func (l *errorList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(l.errs, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return l.errs
}
