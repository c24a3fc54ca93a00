package main

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convoy-gitops/convoy/internal/notify"
)

// forwardEvents makes every event recorder of mgr also post its events to addr in Flux's event
// format, with a worker that runs with the manager (on the leader); an empty addr returns mgr
// as it is.
func forwardEvents(mgr ctrl.Manager, addr string) (ctrl.Manager, error) {
	if addr == "" {
		return mgr, nil
	}
	f, err := notify.NewForwarder(notify.Options{Address: addr, Scheme: mgr.GetScheme(),
		Log: ctrl.Log.WithName("events")})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(manager.RunnableFunc(f.Run)); err != nil {
		return nil, err
	}
	return f.WrapManager(mgr), nil
}
