// Package notify forwards convoy's events to an HTTP endpoint in the event format of Flux's
// controllers (github.com/fluxcd/pkg/apis/event v1beta1), so that a Flux notification-controller
// (its Providers and Alerts) turns them into commit statuses and chat messages. A stock Flux
// discards them: its Alert CRD accepts only Flux's own kinds as event sources, so no Alert
// can name a convoy object; the deploy/flux kustomize component adds convoy's kinds.
//
// A Forwarder wraps the event recorders a manager hands out: every event is still recorded in
// the cluster, and a copy is queued for the endpoint. The revision an event is about travels in
// the convoy.dev/revision annotation and is posted as the metadata key "revision", as Flux's
// recorder strips its group prefix from annotations. Only the event's object reference, reason,
// message and convoy's own annotations are posted: never an object's content, so never a
// Secret's data.
//
// Delivery is best effort, as Flux's: one worker posts the queue in order and retries an
// event a few times with backoff before it drops it; a full queue drops new events. Neither
// blocks a reconcile.
package notify
