package pass

import (
	"fmt"
	"strings"
	"unicode/utf8"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Conditioned is an object with a metav1.Condition list in its status.
type Conditioned interface {
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
	GetGeneration() int64
}

// Object is an API object with conditions: what the status finalizer works on.
type Object interface {
	client.Object
	Conditioned
}

// MaxMessageLength bounds a condition's message, in bytes: well under the API's 32 KiB, so that
// a status with several long conditions still fits in one patch.
const MaxMessageLength = 8 << 10

// Set sets a condition stamped with the object's generation and reports whether it changed.
// LastTransitionTime moves only when the status changes. The message is bounded by
// BoundMessage.
func Set(obj Conditioned, condType string, status metav1.ConditionStatus, reason, message string) bool {
	conds := obj.GetConditions()
	changed := apimeta.SetStatusCondition(&conds, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            BoundMessage(message),
		ObservedGeneration: obj.GetGeneration(),
	})
	obj.SetConditions(conds)
	return changed
}

// BoundMessage returns msg cut to at most MaxMessageLength bytes: whole lines followed by "… and
// N more lines", or, when the first line alone is too long, its beginning followed by "… and N
// more bytes". The cut never splits a UTF-8 sequence.
func BoundMessage(msg string) string {
	if len(msg) <= MaxMessageLength {
		return msg
	}
	const room = MaxMessageLength - 64 // for the note
	if cut := strings.LastIndexByte(msg[:room], '\n'); cut > 0 {
		return msg[:cut] + fmt.Sprintf("\n… and %d more lines", strings.Count(msg[cut:], "\n"))
	}
	head := CutUTF8(msg, room)
	return head + fmt.Sprintf("… and %d more bytes", len(msg)-len(head))
}

// CutUTF8 returns s cut to at most n bytes without splitting a UTF-8 sequence.
func CutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// MarkTrue sets condType to True with a formatted message.
func MarkTrue(obj Conditioned, condType, reason, format string, args ...any) {
	Set(obj, condType, metav1.ConditionTrue, reason, fmt.Sprintf(format, args...))
}

// MarkFalse sets condType to False with a formatted message.
func MarkFalse(obj Conditioned, condType, reason, format string, args ...any) {
	Set(obj, condType, metav1.ConditionFalse, reason, fmt.Sprintf(format, args...))
}

// MarkUnknown sets condType to Unknown with a formatted message.
func MarkUnknown(obj Conditioned, condType, reason, format string, args ...any) {
	Set(obj, condType, metav1.ConditionUnknown, reason, fmt.Sprintf(format, args...))
}

// Delete removes condType and reports whether it was there.
func Delete(obj Conditioned, condType string) bool {
	conds := obj.GetConditions()
	if apimeta.FindStatusCondition(conds, condType) == nil {
		return false // most passes: RemoveStatusCondition would copy the slice anyway
	}
	removed := apimeta.RemoveStatusCondition(&conds, condType)
	obj.SetConditions(conds)
	return removed
}

// Get returns condType, or nil.
func Get(obj Conditioned, condType string) *metav1.Condition {
	return apimeta.FindStatusCondition(obj.GetConditions(), condType)
}

// IsTrue reports whether condType is True.
func IsTrue(obj Conditioned, condType string) bool {
	return apimeta.IsStatusConditionTrue(obj.GetConditions(), condType)
}

// IsReady reports what kstatus calls Current: Ready=True at the object's generation, and
// neither Stalled nor Reconciling.
func IsReady(obj Conditioned) bool {
	ready := Get(obj, convoyv1alpha1.ReadyCondition)
	return ready != nil && ready.Status == metav1.ConditionTrue &&
		ready.ObservedGeneration == obj.GetGeneration() &&
		!IsTrue(obj, convoyv1alpha1.StalledCondition) && !IsTrue(obj, convoyv1alpha1.ReconcilingCondition)
}

// MarkReconciling sets Reconciling=True and removes Stalled (the two exclude each other).
func MarkReconciling(obj Conditioned, reason, format string, args ...any) {
	Delete(obj, convoyv1alpha1.StalledCondition)
	MarkTrue(obj, convoyv1alpha1.ReconcilingCondition, reason, format, args...)
}

// MarkStalled sets Stalled=True and removes Reconciling.
func MarkStalled(obj Conditioned, reason, format string, args ...any) {
	Delete(obj, convoyv1alpha1.ReconcilingCondition)
	MarkTrue(obj, convoyv1alpha1.StalledCondition, reason, format, args...)
}

// firstTrue returns the first of condTypes that is True, or nil.
func firstTrue(obj Conditioned, condTypes []string) *metav1.Condition {
	for _, t := range condTypes {
		if c := Get(obj, t); c != nil && c.Status == metav1.ConditionTrue {
			return c
		}
	}
	return nil
}
