package checks

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/convoy-gitops/convoy/manifests/probe"
)

// Names the query's answer is bound to in a success condition.
const (
	// ResultVariable is the list of {metric: map(string, string), value: double}, one per
	// series (one with an empty metric for a scalar).
	ResultVariable = "result"
	// ValuesVariable is the list of the series' values, in the order of result.
	ValuesVariable = "values"
)

// conditionRule is the rule a success condition breaks, as a SpecError states it.
const conditionRule = "must be a CEL expression over result (list of {metric, value}) and values (list of double) returning a bool"

// condition is a compiled success condition; its program is safe for concurrent use.
type condition struct {
	expr    string
	program cel.Program
}

var (
	conditionEnvOnce sync.Once
	conditionEnv     *cel.Env
	conditionEnvErr  error
)

// conditionCELEnv returns the environment of success conditions: the libraries of probe rules
// (Kubernetes' stored-expressions environment) with result and values bound.
func conditionCELEnv() (*cel.Env, error) {
	conditionEnvOnce.Do(func() {
		vars := []cel.EnvOption{
			cel.Variable(ResultVariable, cel.ListType(cel.MapType(cel.StringType, cel.DynType))),
			cel.Variable(ValuesVariable, cel.ListType(cel.DoubleType)),
		}
		base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
		set, err := base.Extend(environment.VersionedOptions{IntroducedVersion: version.MajorMinor(1, 0), EnvOptions: vars})
		if err != nil {
			conditionEnvErr = err
			return
		}
		conditionEnv = set.StoredExpressionsEnv()
	})
	return conditionEnv, conditionEnvErr
}

// compileCondition compiles expr with the cost limits of probe rules: refused when its
// estimated worst case over MaxSeries series exceeds probe.MaxEstimatedCELCost, stopped when
// an evaluation exceeds probe.MaxCELCost.
func compileCondition(field, expr string) (*condition, error) {
	e, err := conditionCELEnv()
	if err != nil {
		return nil, specError(field, conditionRule, fmt.Errorf("building the CEL environment: %w", err))
	}
	ast, issues := e.Compile(expr)
	if issues.Err() != nil {
		return nil, specError(field, conditionRule, fmt.Errorf("does not compile: %s", issueText(issues)))
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, specError(field, conditionRule, fmt.Errorf("returns %s", t))
	}
	est, err := e.EstimateCost(ast, &library.CostEstimator{SizeEstimator: answerSizeEstimator{}})
	if err != nil {
		return nil, specError(field, conditionRule, fmt.Errorf("estimating its cost: %w", err))
	}
	if est.Max > probe.MaxEstimatedCELCost {
		return nil, specError(field, conditionRule, fmt.Errorf("is too expensive: its estimated worst-case cost %s "+
			"exceeds the limit %d (up to %d series assumed); avoid comprehensions nested in comprehensions",
			costText(est.Max), probe.MaxEstimatedCELCost, MaxSeries))
	}
	prog, err := e.Program(ast, cel.CostLimit(probe.MaxCELCost), cel.CostTracking(&library.CostEstimator{}))
	if err != nil {
		return nil, specError(field, conditionRule, fmt.Errorf("does not compile: %w", err))
	}
	return &condition{expr: expr, program: prog}, nil
}

// eval evaluates the condition over the series of an answer. An error (a missing key, a
// division by zero, the cost limit) is the evaluation's, not the spec's.
func (c *condition) eval(answer []series) (bool, error) {
	result := make([]any, 0, len(answer))
	values := make([]float64, 0, len(answer))
	for _, s := range answer {
		metric := s.Metric
		if metric == nil {
			metric = map[string]string{}
		}
		result = append(result, map[string]any{"metric": metric, "value": s.Value})
		values = append(values, s.Value)
	}
	out, _, err := c.program.Eval(map[string]any{ResultVariable: result, ValuesVariable: values})
	if err != nil {
		if strings.Contains(err.Error(), "cost limit exceeded") {
			return false, fmt.Errorf("stopped at the cost limit of %d per evaluation: %w", probe.MaxCELCost, err)
		}
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("returned %s, not a bool", out.Type().TypeName())
	}
	return b, nil
}

// answerSizeEstimator bounds every list of an answer at MaxSeries elements and every map and
// string at maxEstimatedLabels.
type answerSizeEstimator struct{}

// maxEstimatedLabels is the size assumed of a series' label map and of every string.
const maxEstimatedLabels = 1024

// EstimateSize implements checker.CostEstimator.
func (answerSizeEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if n.Type() != nil && n.Type().Kind() == cel.ListKind {
		return &checker.SizeEstimate{Min: 0, Max: MaxSeries}
	}
	return &checker.SizeEstimate{Min: 0, Max: maxEstimatedLabels}
}

// EstimateCallCost implements checker.CostEstimator, leaving calls to CEL's own estimate.
func (answerSizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// costText formats a cost, which may be CEL's "unbounded".
func costText(c uint64) string {
	if c == math.MaxUint64 {
		return "(unbounded)"
	}
	return strconv.FormatUint(c, 10)
}

// issueText formats compile issues on one line: "column C: message; ...".
func issueText(issues *cel.Issues) string {
	parts := make([]string, 0, len(issues.Errors()))
	for _, e := range issues.Errors() {
		parts = append(parts, fmt.Sprintf("column %d: %s", e.Location.Column()+1, e.Message))
	}
	return strings.Join(parts, "; ")
}
