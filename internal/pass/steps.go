package pass

import "context"

// Step is one stage of a reconcile pass over a reconciler's scope S; it documents what it
// reads from and writes into the scope.
type Step[S any] func(ctx context.Context, s S) error

// Finished is implemented by a scope that a step can end early and successfully (a paused
// object, say): RunSteps stops once Finished returns true.
type Finished interface {
	Finished() bool
}

// RunSteps runs steps in order and returns the first error; it stops without one when the
// scope is Finished.
func RunSteps[S any](ctx context.Context, s S, steps ...Step[S]) error {
	for _, step := range steps {
		if err := step(ctx, s); err != nil {
			return err
		}
		if f, ok := any(s).(Finished); ok && f.Finished() {
			return nil
		}
	}
	return nil
}
