package probe

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
)

// CELVariable is the name the object is bound to in a CEL rule.
const CELVariable = "self"

// Cost limits of probe rules, in CEL's cost units (Kubernetes' per-call limit of a validation
// rule, about a tenth of a second of CPU).
const (
	// MaxCELCost bounds one evaluation of a rule: an evaluation that exceeds it is stopped and
	// fails.
	MaxCELCost = celconfig.PerCallLimit
	// MaxEstimatedCELCost bounds a rule's worst-case cost as estimated when it is compiled,
	// with every list, map and string of the object assumed to hold up to
	// estimatedCollectionSize elements: a rule over it, such as a comprehension nested in
	// another over the object, is refused before it is ever evaluated.
	MaxEstimatedCELCost = celconfig.PerCallLimit
	// estimatedCollectionSize is the size assumed of every list, map and string of the object
	// when estimating a rule's cost.
	estimatedCollectionSize = 1024
)

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
		if strings.Contains(err.Error(), "cost limit exceeded") {
			return false, fmt.Errorf("evaluating %q: stopped at the cost limit of %d per evaluation: %w", c.Rule, MaxCELCost, err)
		}
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
	if err := checkEstimatedCost(e, ast); err != nil {
		return nil, err
	}
	prog, err := e.Program(ast, cel.CostLimit(MaxCELCost), cel.CostTracking(&library.CostEstimator{}))
	if err != nil {
		return nil, fmt.Errorf("does not compile: %w", err)
	}
	return &CEL{Rule: rule, Message: message, Program: prog}, nil
}

// checkEstimatedCost refuses a rule whose worst-case cost exceeds MaxEstimatedCELCost.
func checkEstimatedCost(e *cel.Env, ast *cel.Ast) error {
	est, err := e.EstimateCost(ast, &library.CostEstimator{SizeEstimator: objectSizeEstimator{}})
	if err != nil {
		return fmt.Errorf("estimating its cost: %w", err)
	}
	if est.Max > MaxEstimatedCELCost {
		return fmt.Errorf("is too expensive: its estimated worst-case cost %s exceeds the limit %d "+
			"(lists, maps and strings of the object assumed to hold up to %d elements); avoid comprehensions nested in comprehensions",
			costText(est.Max), MaxEstimatedCELCost, estimatedCollectionSize)
	}
	return nil
}

// costText formats a cost, which may be CEL's "unbounded".
func costText(c uint64) string {
	if c == math.MaxUint64 {
		return "(unbounded)"
	}
	return strconv.FormatUint(c, 10)
}

// objectSizeEstimator assumes every list, map and string of the object has at most
// estimatedCollectionSize elements.
type objectSizeEstimator struct{}

// EstimateSize implements checker.CostEstimator.
func (objectSizeEstimator) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: estimatedCollectionSize}
}

// EstimateCallCost implements checker.CostEstimator, leaving calls to CEL's own estimate.
func (objectSizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// issueText formats compile issues on one line: "column C: message; ...".
func issueText(issues *cel.Issues) string {
	parts := make([]string, 0, len(issues.Errors()))
	for _, e := range issues.Errors() {
		parts = append(parts, fmt.Sprintf("column %d: %s", e.Location.Column()+1, e.Message))
	}
	return strings.Join(parts, "; ")
}

// Variables of Package Operator filter expressions (spec.filter and the
// package-operator.run/condition annotation): the template context's top-level maps, and cond,
// the named conditions' results.
var filterVariables = []string{"package", "config", "images", "dependencies", "environment"}

var (
	filterEnvOnce sync.Once
	filterEnv     *cel.Env
	filterEnvErr  error
)

// filterCELEnv returns the environment of filter expressions: the libraries of probe rules with
// filterVariables bound as map(string, dyn) and cond as map(string, bool).
func filterCELEnv() (*cel.Env, error) {
	filterEnvOnce.Do(func() {
		opts := []cel.EnvOption{cel.Variable("cond", cel.MapType(cel.StringType, cel.BoolType))}
		for _, v := range filterVariables {
			opts = append(opts, cel.Variable(v, cel.MapType(cel.StringType, cel.DynType)))
		}
		base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
		set, err := base.Extend(environment.VersionedOptions{IntroducedVersion: version.MajorMinor(1, 0), EnvOptions: opts})
		if err != nil {
			filterEnvErr = err
			return
		}
		filterEnv = set.StoredExpressionsEnv()
	})
	return filterEnv, filterEnvErr
}

// EvalFilter compiles and evaluates a Package Operator filter expression against the template
// context ctx (its package, config, images, dependencies and environment) and the named
// conditions cond, with the cost limits of probe rules. It must return a bool.
func EvalFilter(expr string, ctx map[string]any, cond map[string]bool) (bool, error) {
	e, err := filterCELEnv()
	if err != nil {
		return false, fmt.Errorf("building the CEL environment: %w", err)
	}
	ast, issues := e.Compile(expr)
	if issues.Err() != nil {
		return false, fmt.Errorf("does not compile: %s", issueText(issues))
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return false, fmt.Errorf("must return a bool, returns %s", t)
	}
	if err := checkEstimatedCost(e, ast); err != nil {
		return false, err
	}
	prog, err := e.Program(ast, cel.CostLimit(MaxCELCost), cel.CostTracking(&library.CostEstimator{}))
	if err != nil {
		return false, fmt.Errorf("does not compile: %w", err)
	}
	if cond == nil {
		cond = map[string]bool{}
	}
	vars := map[string]any{"cond": cond}
	for _, v := range filterVariables {
		m, _ := ctx[v].(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		vars[v] = m
	}
	out, _, err := prog.Eval(vars)
	if err != nil {
		if strings.Contains(err.Error(), "cost limit exceeded") {
			return false, fmt.Errorf("stopped at the cost limit of %d per evaluation: %w", MaxCELCost, err)
		}
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("returned %s, not a bool", out.Type().TypeName())
	}
	return b, nil
}
