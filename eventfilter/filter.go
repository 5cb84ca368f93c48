// Package eventfilter is a webhook's payload filter: a CEL expression over
// an event as the spec's body has it, compiled once and matched per event.
package eventfilter

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
)

// Limits of a filter.
const (
	// MaxExpressionBytes bounds a filter's text.
	MaxExpressionBytes = 2000
	// MaxCost bounds a filter's cost, in CEL's cost units (about one per
	// operation, one per 10 bytes a string function reads): its estimate
	// for the largest event at compile time, and what one evaluation spends.
	// A filter of a few dozen comparisons costs well under 1,000.
	MaxCost = 10000
	// maxFieldChars is the size filters assume of each string of an
	// event when their cost is estimated (the API's MaxEventFieldBytes).
	maxFieldChars = 2048
)

// ErrEvaluation is wrapped by Match's error when a filter fails on an event.
var ErrEvaluation = errors.New("the filter could not be evaluated")

// Filter is a compiled filter; it is safe for concurrent use.
type Filter struct {
	expr string
	// fast runs without tracking its cost: Compile proved its cost at most
	// MaxCost for events whose strings are at most maxFieldChars long.
	// guarded tracks it and stops at MaxCost, for any other event. Cost
	// tracking makes an evaluation about five times slower.
	fast, guarded cel.Program
}

// env is the environment every filter compiles in: the event's members as
// variables, each with the spec's name and type ("data.jobId" is one
// variable; there is no "data" map).
var env = mustEnv()

func mustEnv() *cel.Env {
	opts := []cel.EnvOption{cel.ParserExpressionSizeLimit(MaxExpressionBytes)}
	for _, f := range fields {
		t := cel.StringType
		if f.kind == intField {
			t = cel.IntType
		}
		opts = append(opts, cel.Variable(f.name, t))
	}
	e, err := cel.NewEnv(opts...)
	if err != nil {
		panic(fmt.Sprintf("eventfilter: environment: %v", err)) // a defect of the declarations above
	}
	return e
}

// Compile type-checks expr, which must be a bool expression over the
// event's fields at most MaxExpressionBytes long whose estimated cost is at
// most MaxCost, and returns it ready to match. Its error is a message for
// the user: the compiler's, or what is out of bounds.
func Compile(expr string) (*Filter, error) {
	switch {
	case strings.TrimSpace(expr) == "":
		return nil, errors.New("the filter is empty; use null for no filter")
	case len(expr) > MaxExpressionBytes:
		return nil, fmt.Errorf("the filter is %d bytes long; at most %d are allowed", len(expr), MaxExpressionBytes)
	case !utf8.ValidString(expr) || strings.IndexByte(expr, 0) >= 0:
		return nil, errors.New("the filter must be valid UTF-8 text without NUL characters")
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		msg := iss.Err().Error()
		if strings.Contains(msg, "undeclared reference") {
			msg += "\nThe event's fields are " + fieldNames() + "."
		}
		return nil, errors.New(msg)
	}
	if !ast.OutputType().IsExactType(types.BoolType) {
		return nil, fmt.Errorf("the filter must be a bool expression (true to deliver); this one is %s", ast.OutputType())
	}
	est, err := env.EstimateCost(ast, sizes{})
	if err != nil {
		return nil, fmt.Errorf("the filter's cost could not be estimated: %v", err)
	}
	if est.Max > MaxCost {
		return nil, fmt.Errorf("the filter may cost up to %d units to evaluate; at most %d are allowed (fewer loops or string functions)", est.Max, MaxCost)
	}
	f := &Filter{expr: expr}
	if f.fast, err = env.Program(ast, cel.EvalOptions(cel.OptOptimize)); err == nil {
		f.guarded, err = env.Program(ast, cel.CostLimit(MaxCost), cel.EvalOptions(cel.OptOptimize))
	}
	if err != nil {
		return nil, fmt.Errorf("the filter could not be prepared: %v", err)
	}
	return f, nil
}

// String returns the filter's expression as it was compiled.
func (f *Filter) String() string { return f.expr }

// Match reports whether the event passes the filter for one webhook (its
// id and name are the body's webhooksID and webhookName). An error wraps
// ErrEvaluation: the filter failed on this event (over its cost limit, an
// overflow, ...), which says nothing about a match.
func (f *Filter) Match(ev *Event, webhookID, webhookName string) (bool, error) {
	prg := f.fast
	if !ev.bounded || len(webhookID) > maxFieldChars || len(webhookName) > maxFieldChars {
		prg = f.guarded
	}
	out, _, err := prg.Eval(&activation{ev: ev, webhookID: webhookID, webhookName: webhookName})
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrEvaluation, err)
	}
	b, ok := out.(types.Bool)
	if !ok { // the checker proved bool; kept so a defect is an error, not a panic
		return false, fmt.Errorf("%w: result %v is not a bool", ErrEvaluation, out.Type())
	}
	return bool(b), nil
}

// sizes gives the cost estimator the largest size of each string variable.
type sizes struct{}

func (sizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if p := n.Path(); len(p) == 1 && n.Type().IsExactType(types.StringType) {
		return &checker.SizeEstimate{Min: 0, Max: maxFieldChars}
	}
	return nil
}

func (sizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// fieldNames lists the variables a filter may read.
func fieldNames() string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}
