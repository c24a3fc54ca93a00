package pass

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// EventAction is the action recorded on every event convoy emits.
const EventAction = "Reconcile"

// RecoveredReason is the reason of the event of an object that is Ready again after a failure.
const RecoveredReason = "Recovered"

// Notifier emits the events of a reconcile: a Warning for every failed or stalled pass (and for
// a waiting pass whose reason or message changed), a Normal event on success only when
// something changed (a note from the reconciler, or a recovery).
type Notifier struct {
	// Recorder sends the events; nil records nothing.
	Recorder events.EventRecorder
}

// NewNotifier returns a Notifier sending through rec.
func NewNotifier(rec events.EventRecorder) *Notifier { return &Notifier{Recorder: rec} }

// notify emits the event for one pass; prev is the Ready condition before the pass.
func (n *Notifier) notify(ctx context.Context, obj Object, prev *metav1.Condition, out Outcome, s Summary) {
	if n == nil || n.Recorder == nil {
		return
	}
	switch out.Class {
	case ClassSuccess:
		n.notifySuccess(ctx, obj, prev, s)
	case ClassWaiting:
		if prev != nil && prev.Reason == out.Reason && prev.Message == out.Message {
			return
		}
		n.emit(ctx, obj, corev1.EventTypeWarning, out.Reason, out.Message, s.EventAnnotations)
	default:
		n.emit(ctx, obj, corev1.EventTypeWarning, out.Reason, out.Message, s.EventAnnotations)
	}
}

// notifySuccess emits the reconciler's note, or a recovery event when Ready was not True.
func (n *Notifier) notifySuccess(ctx context.Context, obj Object, prev *metav1.Condition, s Summary) {
	ready := Get(obj, convoyv1alpha1.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		return
	}
	switch {
	case s.Event != "":
		n.emit(ctx, obj, corev1.EventTypeNormal, ready.Reason, s.Event, s.EventAnnotations)
	case prev != nil && prev.Status != metav1.ConditionTrue:
		n.emit(ctx, obj, corev1.EventTypeNormal, RecoveredReason, ready.Message, s.EventAnnotations)
	}
}

// emit sends one event and logs it at debug level.
func (n *Notifier) emit(ctx context.Context, obj Object, eventType, reason, note string, annotations map[string]string) {
	if reason == "" {
		reason = FailedReason
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Event", "type", eventType, "reason", reason, "note", note)
	if ar, ok := n.Recorder.(events.AnnotatedEventRecorder); ok && len(annotations) > 0 {
		ar.AnnotatedEventf(obj, nil, annotations, eventType, reason, EventAction, "%s", note)
		return
	}
	n.Recorder.Eventf(obj, nil, eventType, reason, EventAction, "%s", note)
}
