package sync

import "context"

// startManager starts the controllers under test; it returns a function that stops them.
func startManager(ctx context.Context) (func(), error) {
	return func() {}, nil
}
