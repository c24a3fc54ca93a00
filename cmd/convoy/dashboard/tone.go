package dashboard

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Tone is what a condition says, which the page shows as the colour of its pill.
type Tone string

// The tones of conditions.
const (
	// ToneGood: the condition reports the state the object is meant to be in (green).
	ToneGood Tone = "good"
	// ToneBad: the condition reports a failure (red).
	ToneBad Tone = "bad"
	// ToneProgress: work is under way and nothing failed (blue).
	ToneProgress Tone = "progress"
	// ToneHeld: the object is held on purpose, or retries after an error (amber).
	ToneHeld Tone = "held"
	// ToneUnknown: the status is Unknown, or the page does not know the condition (grey).
	ToneUnknown Tone = "unknown"
)

// polarity is what a condition type's True and False mean.
type polarity struct{ onTrue, onFalse Tone }

// Note: the one place the page decides what a condition means; a test keeps it covering every
// condition type of the API. Ready is also read against Stalled and Reconciling (readyTone).
var polarities = map[string]polarity{
	// Normal when True.
	convoyv1alpha1.ReadyCondition:       {onTrue: ToneGood, onFalse: ToneBad},
	convoyv1alpha1.AvailableCondition:   {onTrue: ToneGood, onFalse: ToneBad},
	convoyv1alpha1.ShardsReadyCondition: {onTrue: ToneGood, onFalse: ToneBad},
	// Abnormal when True: a failure.
	convoyv1alpha1.StalledCondition:     {onTrue: ToneBad, onFalse: ToneGood},
	convoyv1alpha1.FetchFailedCondition: {onTrue: ToneBad, onFalse: ToneGood},
	// True while work is under way: done when False.
	convoyv1alpha1.ReconcilingCondition: {onTrue: ToneProgress, onFalse: ToneGood},
	convoyv1alpha1.ProgressingCondition: {onTrue: ToneProgress, onFalse: ToneGood},
	// True while someone holds a Package on purpose: not a failure, but not the normal state.
	convoyv1alpha1.PausedCondition:           {onTrue: ToneHeld, onFalse: ToneGood},
	convoyv1alpha1.HasPausedPackageCondition: {onTrue: ToneHeld, onFalse: ToneGood},
}

// conditionTone is the tone of c among the conditions of its object, conds.
func conditionTone(c metav1.Condition, conds []metav1.Condition) Tone {
	p, known := polarities[c.Type]
	switch {
	case !known || c.Status == metav1.ConditionUnknown:
		return ToneUnknown
	case c.Type == convoyv1alpha1.ReconcilingCondition && c.Status == metav1.ConditionTrue &&
		c.Reason == convoyv1alpha1.ProgressingWithRetryReason:
		return ToneHeld
	case c.Type == convoyv1alpha1.ReadyCondition && c.Status == metav1.ConditionFalse:
		return readyTone(conds)
	case c.Status == metav1.ConditionTrue:
		return p.onTrue
	default:
		return p.onFalse
	}
}

// readyTone is the tone of Ready=False, read as kstatus does: a failure when the object is
// stalled or not reconciling, else the tone of its Reconciling (it waits for a gate, a
// dependency or its own work, or retries after an error).
func readyTone(conds []metav1.Condition) Tone {
	var reconciling *metav1.Condition
	for i := range conds {
		switch {
		case conds[i].Type == convoyv1alpha1.StalledCondition && conds[i].Status == metav1.ConditionTrue:
			return ToneBad
		case conds[i].Type == convoyv1alpha1.ReconcilingCondition && conds[i].Status == metav1.ConditionTrue:
			reconciling = &conds[i]
		}
	}
	if reconciling == nil {
		return ToneBad
	}
	return conditionTone(*reconciling, conds)
}
