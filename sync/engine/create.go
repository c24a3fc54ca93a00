package engine

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// An install creates objects without reading them first. An object is taken for new when
// nothing says it exists: the owner's previous inventory does not hold it and the synced watch
// of the management cluster, which holds every object carrying an owner's labels, does not
// either. Such an object is applied create-only, one request: the apply carries a
// resourceVersion no object ever has (createOnlyVersion), which the API server ignores when it
// creates the object and refuses, with a conflict, when the object exists. So an object made
// out of band, or by an owner whose watch has not caught up, is never written by the apply that
// guessed wrong; it is read, and its ownership checked, like any object known to exist. When
// that check refuses it, the objects the stage created are deleted again: a stage that collides
// leaves nothing behind, as when the collision is known before any write.

// createOnlyVersion is the resourceVersion of a create-only apply. etcd's first write is
// revision 2, so no object ever has resourceVersion 1.
const createOnlyVersion = "1"

// splitFresh splits states into those the memory says nothing says exist (Advice.Fresh:
// created create-only, without a read) and the rest (read first).
func splitFresh(states []desiredState) (fresh, rest []desiredState) {
	for _, s := range states {
		if s.createOnly {
			fresh = append(fresh, s)
		} else {
			rest = append(rest, s)
		}
	}
	return fresh, rest
}

// created returns the states of fresh not in existed.
func created(fresh, existed []desiredState) []desiredState {
	skip := make(map[objectKey]bool, len(existed))
	for _, s := range existed {
		skip[keyOf(s.obj)] = true
	}
	var out []desiredState
	for _, s := range fresh {
		if !skip[keyOf(s.obj)] {
			out = append(out, s)
		}
	}
	return out
}

// undoCreated deletes the objects of states, which this stage created, with their UID as a
// precondition, and returns cause; a failed delete is added to it.
func (e *Engine) undoCreated(ctx context.Context, c *cluster, states []desiredState, out *phaseOutcome, cause error) error {
	for _, s := range states {
		out.forgotten[keyOf(s.obj)] = true
		live := out.observer.live(s.obj)
		if live == nil {
			continue
		}
		err := c.client.Delete(ctx, live.DeepCopy(), client.Preconditions{UID: ptrTo(live.GetUID())})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%w; deleting %s, created by this pass, failed: %w", cause, describe(s.obj), err)
		}
		out.changes.Created--
	}
	return cause
}

func ptrTo[T any](v T) *T { return &v }

// refusedCreate reports the errors of a create-only apply of an object that exists.
func refusedCreate(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}
