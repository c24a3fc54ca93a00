package pass

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

type trace struct {
	ran  []string
	done bool
}

func (t *trace) Finished() bool { return t.done }

func record(name string, err error, finish bool) Step[*trace] {
	return func(_ context.Context, t *trace) error {
		t.ran = append(t.ran, name)
		t.done = finish
		return err
	}
}

func TestRunStepsStopsAtTheFirstError(t *testing.T) {
	g := NewWithT(t)
	boom := errors.New("boom")
	s := &trace{}
	err := RunSteps(context.Background(), s, record("a", nil, false), record("b", boom, false), record("c", nil, false))
	g.Expect(err).To(MatchError(boom))
	g.Expect(s.ran).To(Equal([]string{"a", "b"}))
}

func TestRunStepsStopsWhenTheScopeIsFinished(t *testing.T) {
	g := NewWithT(t)
	s := &trace{}
	err := RunSteps(context.Background(), s, record("a", nil, true), record("b", nil, false))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.ran).To(Equal([]string{"a"}))
}
