package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// maxEvents bounds the events a Package page lists, newest first.
const maxEvents = 20

// PackageView is the page of one Package.
type PackageView struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Owner names the HostedClusterPackage that owns it; empty for a Package made by hand.
	Owner string `json:"owner,omitempty"`
	// Revision is the commit of the spec; Applied the last one applied and available;
	// Attempted the last one tried.
	Revision  string `json:"revision"`
	Applied   string `json:"applied,omitempty"`
	Attempted string `json:"attempted,omitempty"`
	Paused    bool   `json:"paused,omitempty"`
	// LastError is the message of Ready=False or Stalled=True; empty when healthy.
	LastError  string      `json:"lastError,omitempty"`
	Conditions []Condition `json:"conditions"`
	// Phases in apply order.
	Phases []PhaseView `json:"phases"`
	// Events are the newest events of the Package, newest first.
	Events []EventView `json:"events"`
}

// PhaseView is one phase and its objects.
type PhaseView struct {
	Name string `json:"name"`
	// Target is "management" or "hosted".
	Target    string `json:"target"`
	Available bool   `json:"available"`
	// Message is the probe message when the phase is not available.
	Message string       `json:"message,omitempty"`
	Objects []ObjectView `json:"objects"`
}

// ObjectView is one applied object of the inventory.
type ObjectView struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Target is "management" or "hosted".
	Target string `json:"target"`
}

// EventView is one event of the Package.
type EventView struct {
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Count   int32     `json:"count,omitempty"`
	Last    time.Time `json:"last"`
}

// BuildPackage reads the Package namespace/name and its events from r.
func BuildPackage(ctx context.Context, r client.Reader, namespace, name string) (*PackageView, error) {
	pkg := &convoyv1alpha1.Package{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pkg); err != nil {
		return nil, fmt.Errorf("reading Package %s/%s: %w", namespace, name, err)
	}
	st := pkg.Status
	v := &PackageView{Namespace: namespace, Name: name, Owner: pkg.Labels[convoyv1alpha1.HostedClusterPackageLabel],
		Revision: pkg.Spec.Revision, Applied: st.Revision, Attempted: st.LastAttemptedRevision, Paused: pkg.Spec.Paused,
		LastError: lastError(st.Conditions), Conditions: conditionsOf(st.Conditions), Phases: phasesOf(st)}
	events, err := eventsOf(ctx, r, pkg)
	if err != nil {
		return nil, err
	}
	v.Events = events
	return v, nil
}

// lastError is the message of Stalled=True, else of Ready=False.
func lastError(conds []metav1.Condition) string {
	if c := apimeta.FindStatusCondition(conds, convoyv1alpha1.StalledCondition); c != nil && c.Status == metav1.ConditionTrue {
		return c.Message
	}
	if c := apimeta.FindStatusCondition(conds, convoyv1alpha1.ReadyCondition); c != nil && c.Status == metav1.ConditionFalse {
		return c.Message
	}
	return ""
}

// phasesOf lists the phases in order with the inventory's objects of each; objects of phases
// no longer reported are left out.
func phasesOf(st convoyv1alpha1.SyncStatus) []PhaseView {
	phases := make([]PhaseView, 0, len(st.Phases))
	index := map[string]int{}
	for _, p := range st.Phases {
		target := convoyv1alpha1.InventoryClusterManagement
		if p.Class != "" {
			target = convoyv1alpha1.InventoryClusterHosted
		}
		index[p.Name] = len(phases)
		phases = append(phases, PhaseView{Name: p.Name, Target: target, Available: p.Available, Message: p.Message,
			Objects: []ObjectView{}})
	}
	for _, e := range st.Inventory {
		i, ok := index[e.Phase]
		if !ok {
			continue
		}
		phases[i].Objects = append(phases[i].Objects, objectOf(e))
	}
	return phases
}

// objectOf reads an inventory id "<namespace>_<name>_<group>_<kind>".
func objectOf(e convoyv1alpha1.InventoryEntry) ObjectView {
	parts := strings.Split(e.ID, "_")
	o := ObjectView{Name: e.ID, Target: e.Cluster}
	if len(parts) == 4 {
		o.Namespace, o.Name, o.Kind = parts[0], parts[1], parts[3]
	}
	return o
}

// eventsOf lists the newest events about pkg.
func eventsOf(ctx context.Context, r client.Reader, pkg *convoyv1alpha1.Package) ([]EventView, error) {
	list := &corev1.EventList{}
	if err := r.List(ctx, list, client.InNamespace(pkg.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the events of Package %s/%s: %w", pkg.Namespace, pkg.Name, err)
	}
	out := []EventView{}
	for i := range list.Items {
		e := &list.Items[i]
		if e.InvolvedObject.Kind != "Package" || e.InvolvedObject.Name != pkg.Name {
			continue
		}
		out = append(out, EventView{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count, Last: eventTime(e)})
	}
	slices.SortFunc(out, func(a, b EventView) int { return b.Last.Compare(a.Last) })
	if len(out) > maxEvents {
		out = out[:maxEvents]
	}
	return out, nil
}

// eventTime is when an event last happened, whichever API recorded it.
func eventTime(e *corev1.Event) time.Time {
	var series time.Time
	if e.Series != nil {
		series = e.Series.LastObservedTime.Time
	}
	return cmp.Or(e.LastTimestamp.Time, series, e.EventTime.Time, e.CreationTimestamp.Time)
}
