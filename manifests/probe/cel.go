package probe

import (
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"
)

// CELVariable is the name the object is bound to in a CEL rule.
const CELVariable = "self"

// CEL is a compiled CEL rule. Its program is safe for concurrent use.
type CEL struct {
	// Rule is the source expression.
	Rule string
	// Message is reported when the rule is false.
	Message string
	// Program is the compiled rule, with Kubernetes' CEL libraries and per-call cost limit.
	Program cel.Program
}

// Eval evaluates the rule against an object (as from unstructured.Unstructured.Object).
// A rule that does not yield a bool is an error.
func (c *CEL) Eval(obj map[string]any) (bool, error) {
	out, _, err := c.Program.Eval(map[string]any{CELVariable: obj})
	if err != nil {
		return false, fmt.Errorf("evaluating %q: %w", c.Rule, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("rule %q returned %s, not a bool", c.Rule, out.Type().TypeName())
	}
	return b, nil
}

var (
	celEnvOnce sync.Once
	celEnv     *cel.Env
	celEnvErr  error
)

// env returns the CEL environment of probes: Kubernetes' stored-expressions environment (the
// libraries CRD validation rules have, stable across versions, as suits rules kept in files)
// with the object bound to "self" as a dynamic value.
func env() (*cel.Env, error) {
	celEnvOnce.Do(func() {
		base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
		set, err := base.Extend(environment.VersionedOptions{
			IntroducedVersion: version.MajorMinor(1, 0),
			EnvOptions:        []cel.EnvOption{cel.Variable(CELVariable, cel.DynType)},
		})
		if err != nil {
			celEnvErr = err
			return
		}
		celEnv = set.StoredExpressionsEnv()
	})
	return celEnv, celEnvErr
}

// CompileCEL compiles a rule; it must type-check to a bool (or a dynamic value).
func CompileCEL(rule, message string) (*CEL, error) {
	e, err := env()
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	ast, issues := e.Compile(rule)
	if issues.Err() != nil {
		return nil, fmt.Errorf("does not compile: %s", issueText(issues))
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, fmt.Errorf("must return a bool, returns %s", t)
	}
	prog, err := e.Program(ast)
	if err != nil {
		return nil, fmt.Errorf("does not compile: %w", err)
	}
	return &CEL{Rule: rule, Message: message, Program: prog}, nil
}

// issueText formats compile issues on one line: "column C: message; ...".
func issueText(issues *cel.Issues) string {
	parts := make([]string, 0, len(issues.Errors()))
	for _, e := range issues.Errors() {
		parts = append(parts, fmt.Sprintf("column %d: %s", e.Location.Column()+1, e.Message))
	}
	return strings.Join(parts, "; ")
}
