package pass

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// StatusFieldOwner is the field manager of every status patch convoy makes. It must never
// change: managed fields recorded under it would be orphaned.
const StatusFieldOwner = "convoy-status"

// StatusFields points at the status fields the finalizer maintains besides conditions. A nil
// pointer means the kind has no such field.
type StatusFields struct {
	// ObservedGeneration is bumped to metadata.generation on success or stall.
	ObservedGeneration *int64
	// LastHandledReconcileAt receives the value of the convoy.dev/requestedAt annotation.
	LastHandledReconcileAt *string
}

// StatusOptions configure a StatusFinalizer for one kind.
type StatusOptions struct {
	// NegativeConditions are the kind's abnormal-true conditions, most important first; one
	// that is True makes Ready False even when the pass returned no error.
	NegativeConditions []string
	// Notifier emits events; nil emits none.
	Notifier *Notifier
	// FieldOwner is the field manager of the status patch; empty means StatusFieldOwner. A
	// shard replica patches as ShardStatusFieldOwner(shard), so that the managed fields say
	// which replica wrote a status.
	FieldOwner string
	// Written remembers the controller's status writes, so that a pass starting from a cache
	// behind its own last write still writes its status; nil trusts the cache.
	Written *WrittenVersions
	// Reader reads the object from the API server when a status patch computed from a stale
	// base is refused; nil reads through the client.
	Reader client.Reader
	// SameStatus reports whether two versions of the kind hold statuses that encode to the same
	// JSON, faster than reflection; false means "compare them as JSON". Nil compares by
	// reflection. Every settled pass asks it.
	SameStatus func(before, after client.Object) bool
}

// Summary is what a reconcile pass hands to the finalizer.
type Summary struct {
	// Err is the error of the pass (classified by Classify).
	Err error
	// Interval is the requeue delay after success, already jittered.
	Interval time.Duration
	// Reason of Ready=True; defaults to Succeeded.
	Reason string
	// Message of Ready=True.
	Message string
	// Event, when set, is emitted as a Normal event on success (e.g. "new revision ..."); an
	// object recovering from a failure gets a recovery event otherwise.
	Event string
	// EventAnnotations are attached to the events of this pass (e.g. the revision).
	EventAnnotations map[string]string
}

// ShardStatusFieldOwner returns the status field manager of the replica that reconciles shard:
// StatusFieldOwner for the unsharded replica, StatusFieldOwner + "-" + shard otherwise. Status
// patches are merge patches, so changing the manager orphans no server-side apply ownership.
func ShardStatusFieldOwner(shard string) string {
	if shard == "" {
		return StatusFieldOwner
	}
	return StatusFieldOwner + "-" + shard
}

// StatusFinalizer computes the summary conditions at the end of a reconcile and patches the
// status subresource when, and only when, the status changed. Create it right after reading
// the object and call Finalize in a defer.
//
// Note: the patch is a JSON merge patch of the status alone, computed from the snapshot taken
// by NewStatusFinalizer, sent with field owner StatusOptions.FieldOwner (default StatusFieldOwner) and
// locked to the snapshot's resourceVersion (see patch).
type StatusFinalizer struct {
	client client.Client
	obj    Object
	before client.Object
	fields StatusFields
	opts   StatusOptions
}

// NewStatusFinalizer snapshots obj for later comparison.
func NewStatusFinalizer(c client.Client, obj Object, fields StatusFields, opts StatusOptions) *StatusFinalizer {
	before, _ := obj.DeepCopyObject().(client.Object)
	return &StatusFinalizer{client: c, obj: obj, before: before, fields: fields, opts: opts}
}

// Finalize applies the outcome of the pass to the status, emits events, patches the status
// if it changed and returns what Reconcile should return, with the patch error aggregated.
func (f *StatusFinalizer) Finalize(ctx context.Context, s Summary) (ctrl.Result, error) {
	out := Classify(s.Err, s.Interval)
	prevReady := Get(f.obj, convoyv1alpha1.ReadyCondition)
	if prevReady != nil {
		prev := *prevReady
		prevReady = &prev
	}
	f.recordRequest()
	applyOutcome(f.obj, out, s, f.opts.NegativeConditions)
	if (out.Class == ClassSuccess || out.Class == ClassStalled) && f.fields.ObservedGeneration != nil {
		*f.fields.ObservedGeneration = f.obj.GetGeneration()
	}
	f.opts.Notifier.notify(ctx, f.obj, prevReady, out, s)
	if err := f.patch(ctx); err != nil {
		return out.Result, errors.Join(out.Err, err)
	}
	logOutcome(ctx, out, prevReady)
	return out.Result, out.Err
}

// recordRequest copies the requestedAt annotation into lastHandledReconcileAt.
func (f *StatusFinalizer) recordRequest() {
	if f.fields.LastHandledReconcileAt == nil {
		return
	}
	if v, ok := f.obj.GetAnnotations()[convoyv1alpha1.RequestedAtAnnotation]; ok {
		*f.fields.LastHandledReconcileAt = v
	}
}

// applyOutcome sets Ready, Reconciling and Stalled from the outcome.
func applyOutcome(obj Conditioned, out Outcome, s Summary, negatives []string) {
	switch out.Class {
	case ClassSuccess:
		Delete(obj, convoyv1alpha1.StalledCondition)
		Delete(obj, convoyv1alpha1.ReconcilingCondition)
		if neg := firstTrue(obj, negatives); neg != nil {
			MarkFalse(obj, convoyv1alpha1.ReadyCondition, neg.Reason, "%s", neg.Message)
			return
		}
		reason := s.Reason
		if reason == "" {
			reason = convoyv1alpha1.SucceededReason
		}
		MarkTrue(obj, convoyv1alpha1.ReadyCondition, reason, "%s", s.Message)
	case ClassStalled:
		MarkStalled(obj, out.Reason, "%s", out.Message)
		MarkFalse(obj, convoyv1alpha1.ReadyCondition, out.Reason, "%s", out.Message)
	case ClassWaiting:
		MarkReconciling(obj, out.Reason, "%s", out.Message)
		MarkFalse(obj, convoyv1alpha1.ReadyCondition, out.Reason, "%s", out.Message)
	default:
		MarkReconciling(obj, convoyv1alpha1.ProgressingWithRetryReason, "%s", out.Message)
		MarkFalse(obj, convoyv1alpha1.ReadyCondition, out.Reason, "%s", out.Message)
	}
}

// maxStaleStatusRetries bounds the times a status patch is computed again against the object
// as the API server has it, after the server refused a patch computed from a stale base.
const maxStaleStatusRetries = 3

// patch writes the status the pass computed, as a merge patch from the status the pass started
// from (its base). The patch carries the base's resourceVersion: when the object changed since
// (the cache had not seen an earlier pass's status write yet, or someone else wrote it), the
// API server refuses it, and the patch is computed again against the object read from the
// server. Without the lock, a field this pass left as the stale base had it, but that the
// earlier pass had changed on the server, would keep the earlier pass's value next to this
// pass's conditions (a Package saying one revision in status.revision and another in its
// conditions). A pass whose status equals its base still checks, with an empty locked patch,
// when the base is older than this process's last status write of the object (WrittenVersions).
//
// A pass that wrote the object itself (its finalizers) got back a newer resourceVersion. That
// write must be locked to the base's resourceVersion (the one write a pass makes to its own
// object, patchFinalizers in sync/synccontroller, is): then the server's status at the newer
// version is still the base's, so the patch is locked to it, and the base is known current. An
// unlocked write would break this, letting a status patch overwrite another writer's.
func (f *StatusFinalizer) patch(ctx context.Context) error {
	base, current := f.before, false
	if rv := f.obj.GetResourceVersion(); rv != base.GetResourceVersion() {
		base, _ = f.before.DeepCopyObject().(client.Object)
		base.SetResourceVersion(rv)
		current = true
	}
	for attempt := 0; ; attempt++ {
		data, changed, err := f.statusPatch(base)
		if err != nil || (!changed && (current || !f.opts.Written.behind(base))) {
			return err
		}
		if data, err = withResourceVersion(data, base.GetResourceVersion()); err != nil {
			return err
		}
		err = f.send(ctx, data)
		switch {
		case apierrors.IsConflict(err) && attempt < maxStaleStatusRetries:
			base, err = f.readFresh(ctx)
			if apierrors.IsNotFound(err) {
				return nil // deleted during the pass: nothing left to report on
			}
			if err != nil {
				return fmt.Errorf("patching status: reading the object after a conflict: %w", err)
			}
			continue
		case apierrors.IsNotFound(err):
			return nil // deleted during the pass: nothing left to report on
		case err != nil:
			return fmt.Errorf("patching status: %w", err)
		}
		f.opts.Written.put(f.obj)
		return nil
	}
}

// send sends a status merge patch and takes from the answer the object's new resourceVersion
// only: it asks for the answer as metadata (PartialObjectMetadata, in protobuf), which the API
// server encodes and the controller decodes for a fraction of the cost of the whole object, its
// spec and the status just sent included. f.obj already holds the status it sent.
func (f *StatusFinalizer) send(ctx context.Context, data []byte) error {
	gvk, err := f.client.GroupVersionKindFor(f.obj)
	if err != nil {
		return err
	}
	answer := MetadataAnswer(gvk, client.ObjectKeyFromObject(f.obj))
	err = f.client.Status().Patch(ctx, answer, client.RawPatch(types.MergePatchType, data),
		client.FieldOwner(cmp.Or(f.opts.FieldOwner, StatusFieldOwner)))
	if err != nil {
		return err
	}
	f.obj.SetResourceVersion(answer.GetResourceVersion())
	return nil
}

// readFresh reads the object from the API server (StatusOptions.Reader, else the client).
func (f *StatusFinalizer) readFresh(ctx context.Context) (client.Object, error) {
	fresh, _ := f.before.DeepCopyObject().(client.Object)
	reader := client.Reader(f.client)
	if f.opts.Reader != nil {
		reader = f.opts.Reader
	}
	return fresh, reader.Get(ctx, client.ObjectKeyFromObject(f.obj), fresh)
}

// withResourceVersion adds metadata.resourceVersion to a merge patch (nil for an empty one), so
// that the API server applies it only to that version of the object.
func withResourceVersion(patch []byte, rv string) ([]byte, error) {
	doc := map[string]any{}
	if len(patch) > 0 {
		if err := json.Unmarshal(patch, &doc); err != nil {
			return nil, err
		}
	}
	doc["metadata"] = map[string]any{"resourceVersion": rv}
	return json.Marshal(doc)
}

// WrittenVersions remembers the resourceVersion the API server answered to this process's last
// status write of each object (at most maxWrittenVersions of them), so that a pass that starts
// from a cache that has not seen that write yet can tell. Safe for concurrent use; the zero
// value is ready, and a nil one remembers nothing.
type WrittenVersions struct {
	mu sync.Mutex
	m  map[types.UID]string
}

// maxWrittenVersions bounds WrittenVersions; past it, it starts again empty.
const maxWrittenVersions = 100_000

// put remembers obj's resourceVersion.
func (w *WrittenVersions) put(obj client.Object) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil || len(w.m) >= maxWrittenVersions {
		w.m = map[types.UID]string{}
	}
	w.m[obj.GetUID()] = obj.GetResourceVersion()
}

// behind reports whether base is not the version of the object this process last wrote: the
// cache may not have seen that write yet.
func (w *WrittenVersions) behind(base client.Object) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rv, ok := w.m[base.GetUID()]
	return ok && rv != base.GetResourceVersion()
}

// statusPatch returns the merge patch turning base's status into the pass's, and whether there
// is any difference.
func (f *StatusFinalizer) statusPatch(base client.Object) ([]byte, bool, error) {
	if f.opts.SameStatus != nil && f.opts.SameStatus(base, f.obj) {
		return nil, false, nil
	}
	return statusPatch(base, f.obj)
}

// statusPatch returns the merge patch turning before's status into after's, and whether there
// is any difference. The statuses compare as the API server stores them: encoded.
func statusPatch(before, after runtime.Object) ([]byte, bool, error) {
	if sameTypedStatus(before, after) {
		return nil, false, nil
	}
	b, err := statusJSON(before)
	if err != nil {
		return nil, false, err
	}
	a, err := statusJSON(after)
	if err != nil {
		return nil, false, err
	}
	if bytes.Equal(b, a) {
		return nil, false, nil
	}
	data, err := jsonpatch.CreateMergePatch(b, a)
	return data, err == nil, err
}

// sameTypedStatus reports whether before and after, pointers to structs of one type, hold
// identical Status fields: the outcome of most passes, answered without encoding them. It is
// strict (a nil slice is not an empty one, times compare with their location), so equal
// statuses always encode alike; false means "compare the encoded statuses", which decide.
func sameTypedStatus(before, after runtime.Object) bool {
	if reflect.TypeOf(before) != reflect.TypeOf(after) {
		return false
	}
	bs, bok := statusField(before)
	as, aok := statusField(after)
	return bok && aok && reflect.DeepEqual(bs.Addr().Interface(), as.Addr().Interface())
}

// statusJSON encodes obj's status as the document {"status": ...}: its typed Status field when
// it has one, so that a pass does not convert the whole object, its unstructured content
// otherwise. Both encode a status alike (the fields' JSON names, times to the second).
func statusJSON(obj runtime.Object) ([]byte, error) {
	if field, ok := statusField(obj); ok {
		return json.Marshal(statusDocument{Status: field.Addr().Interface()})
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	return json.Marshal(statusDocument{Status: u["status"]})
}

// statusDocument is the part of an object a status patch compares.
type statusDocument struct {
	Status any `json:"status"`
}

// statusField returns the Status field of obj when obj points to a struct that has one.
func statusField(obj runtime.Object) (reflect.Value, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	field := v.Elem().FieldByName("Status")
	return field, field.IsValid()
}

// logOutcome logs a failed pass at the end. A stall is a decision an operator reads at the
// default verbosity once, when Ready turns False for its reason; the passes that find the same
// stall again, and waiting passes, log at V(1).
func logOutcome(ctx context.Context, out Outcome, prevReady *metav1.Condition) {
	log := ctrl.LoggerFrom(ctx)
	switch out.Class {
	case ClassStalled:
		if stalledBefore(prevReady, out.Reason) {
			log = log.V(1)
		}
		log.Info("Reconciliation stalled", "reason", out.Reason, "message", out.Message)
	case ClassWaiting:
		log.V(1).Info("Waiting", "reason", out.Reason, "message", out.Message, "requeueAfter", out.Result.RequeueAfter)
	}
}

// stalledBefore says whether the Ready condition before the pass already said False for reason.
func stalledBefore(prevReady *metav1.Condition, reason string) bool {
	return prevReady != nil && prevReady.Status == metav1.ConditionFalse && prevReady.Reason == reason
}
