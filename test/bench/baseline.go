package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// bareOwner is the field manager of the bare loop.
const bareOwner = "bench-bare-loop"

// bareLoop applies each batch with server-side apply, object after object, with concurrency
// workers taking batches from a queue: the floor the API server sets for the same writes, as a
// controller reconciling one namespace per worker would send them.
func bareLoop(ctx context.Context, c client.Client, batches [][]*unstructured.Unstructured, concurrency int) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan []*unstructured.Unstructured)
	errs := make(chan error, concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for batch := range queue {
				if err := applyAll(ctx, c, batch); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		})
	}
	go func() {
		defer close(queue)
		for _, b := range batches {
			select {
			case queue <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	d := time.Since(start)
	select {
	case err := <-errs:
		return d, err
	default:
		return d, nil
	}
}

// applyAll applies objs one by one.
func applyAll(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if err := c.Patch(ctx, o, client.Apply, client.ForceOwnership, client.FieldOwner(bareOwner)); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}
