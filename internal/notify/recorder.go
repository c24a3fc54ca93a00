package notify

import (
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Recorder records events through the recorder it wraps and forwards a copy of each.
type Recorder struct {
	next       recorder.EventRecorder
	forwarder  *Forwarder
	controller string
}

var _ recorder.EventRecorder = (*Recorder)(nil)

// Recorder wraps next, the recorder of the controller named controller.
func (f *Forwarder) Recorder(controller string, next recorder.EventRecorder) *Recorder {
	return &Recorder{next: next, forwarder: f, controller: controller}
}

// Eventf records and forwards an event.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventType, reason, action, note string, args ...any) {
	r.next.Eventf(regarding, related, eventType, reason, action, note, args...)
	r.forwarder.enqueue(r.controller, regarding, nil, eventType, reason, note, args...)
}

// AnnotatedEventf records and forwards an event with annotations; the convoy.dev/ ones become
// the forwarded event's metadata.
func (r *Recorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventType, reason, action, note string, args ...any) {
	r.next.AnnotatedEventf(regarding, related, annotations, eventType, reason, action, note, args...)
	r.forwarder.enqueue(r.controller, regarding, annotations, eventType, reason, note, args...)
}

// manager is a manager whose event recorders forward.
type manager struct {
	ctrl.Manager
	forwarder *Forwarder
}

// WrapManager returns mgr with GetEventRecorder wrapped by the Forwarder, so that every
// controller set up on it forwards its events.
func (f *Forwarder) WrapManager(mgr ctrl.Manager) ctrl.Manager {
	return &manager{Manager: mgr, forwarder: f}
}

// GetEventRecorder returns the manager's recorder of name, forwarding.
func (m *manager) GetEventRecorder(name string) recorder.EventRecorder {
	return m.forwarder.Recorder(name, m.Manager.GetEventRecorder(name))
}
