package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

// Cell states of the rollout grid.
const (
	// StateProgressed: the Package runs the update revision, available and done.
	StateProgressed = "progressed"
	// StateUpdating: the Package has the update revision and has not progressed yet.
	StateUpdating = "updating"
	// StateWaiting: the Package has an older revision (or none); its partition's turn has not
	// come, or the budget has no slot.
	StateWaiting = "waiting"
	// StateFailed: the Package has not progressed for progressDeadlineSeconds.
	StateFailed = "failed"
	// StateSkipped: the rollout leaves the target alone for now (the cell says why).
	StateSkipped = "skipped"
	// StateDependency: the Package waits for a HostedClusterPackage it depends on to be
	// available on its HostedCluster before it installs or moves (DependencyNotReady); it keeps
	// its revision and takes no budget. The cell names the dependency and what it waits for.
	StateDependency = "dependency"
)

// cellStates are the states in the order the page lists them.
var cellStates = []string{StateFailed, StateUpdating, StateDependency, StateWaiting, StateSkipped, StateProgressed}

// DefaultCellsPerPartition is how many cells of one partition a page of the grid holds.
const DefaultCellsPerPartition = 200

// RolloutQuery selects the part of the grid a page shows: at most Limit cells per partition from
// Offset on, of one state when State is set.
type RolloutQuery struct {
	Offset, Limit int
	State         string
}

// RolloutView is the rollout page of one HostedClusterPackage.
type RolloutView struct {
	FleetItem
	// Budget is how many slots of maxUnavailable are in use; Max is 0 when there is no limit.
	Budget Budget `json:"budget"`
	// Grid has one row per partition, in rollout order.
	Grid []GridRow `json:"grid"`
	// Timeline tells when each partition started and finished the update revision.
	Timeline []Span `json:"timeline"`
	// Now is when the view was computed, the right end of the timeline.
	Now time.Time `json:"now"`
	// Query is the part of the grid shown.
	Query RolloutQuery `json:"query"`
}

// Budget is the rollout's budget in use.
type Budget struct {
	InUse int `json:"inUse"`
	Max   int `json:"max"`
}

// GridRow is one partition of the grid.
type GridRow struct {
	Partition string `json:"partition"`
	State     string `json:"state"`
	// Until is when a Soaking partition's soak ends, when a Checking partition's longest check
	// ends, or when the window an OutsideWindow partition waits for opens.
	Until *metav1.Time `json:"until,omitempty"`
	// Checks are the results of the partition's checks at the update revision, in spec order.
	Checks []convoyv1alpha1.CheckStatus `json:"checks,omitempty"`
	// ApproveCommand approves a partition AwaitingApproval.
	ApproveCommand string `json:"approveCommand,omitempty"`
	// Counts are the cells of the partition by state, all of them, not only those shown.
	Counts map[string]int `json:"counts"`
	// Total is the number of targets of the partition; Matching those of Query.State.
	Total    int `json:"total"`
	Matching int `json:"matching"`
	// Cells are the page's cells of the partition.
	Cells []Cell `json:"cells"`
}

// Cell is one target of the grid.
type Cell struct {
	// HostedCluster is "<namespace>/<name>".
	HostedCluster string `json:"hostedCluster"`
	// State is one of the State constants.
	State string `json:"state"`
	// Reason and Message say why, for failed, skipped and waiting cells.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Package is "<namespace>/<name>" of its Package; empty when there is none.
	Package string `json:"package,omitempty"`
}

// Span is the time a partition spent on the update revision; End is nil until it is done.
type Span struct {
	Partition string     `json:"partition"`
	Start     *time.Time `json:"start,omitempty"`
	End       *time.Time `json:"end,omitempty"`
}

// BuildRollout reads the HostedClusterPackage name and its fleet from r and lays its rollout
// out as a grid, as of now.
func BuildRollout(ctx context.Context, r client.Reader, name string, q RolloutQuery, now time.Time) (*RolloutView, error) {
	snap, err := fleetview.Read(ctx, r, name)
	if err != nil {
		return nil, err
	}
	if q.Limit <= 0 {
		q.Limit = DefaultCellsPerPartition
	}
	v := &RolloutView{FleetItem: fleetItem(snap), Now: now, Query: q}
	plan, in, err := fleetview.CurrentPlan(snap, now)
	if err != nil {
		// Note: no revision to plan with yet (no GitSource artifact): the grid stays empty.
		return v, nil //nolint:nilerr // the page shows the status without a grid
	}
	cells := classify(plan, in)
	v.Grid = gridRows(plan, cells, q)
	for i := range v.Grid {
		if v.Grid[i].State == convoyv1alpha1.PartitionAwaitingApproval {
			v.Grid[i].ApproveCommand = fleetview.ApproveCommand(name, v.Grid[i].Partition)
		}
	}
	v.Budget = Budget{Max: plan.MaxUnavailable}
	for _, c := range cells {
		if c.State == StateUpdating || c.State == StateFailed {
			v.Budget.InUse++
		}
	}
	v.Timeline = timeline(plan, in, cells)
	return v, nil
}

// placedCell is a cell with its partition and the Package it reads.
type placedCell struct {
	Cell
	partition string
	pkg       *convoyv1alpha1.Package
}

// classify gives every target of in its cell, in the order of its HostedClusters; the
// partition of each target comes from the plan's partitions and the partition label.
func classify(plan *rollout.Plan, in rollout.Input) []placedCell {
	failed := map[string]convoyv1alpha1.PackageFailure{}
	for _, f := range plan.Failed {
		failed[f.HostedCluster] = f
	}
	skipped := map[string]rollout.IneligibleTarget{}
	for _, t := range plan.Ineligible {
		skipped[t.HostedCluster] = t
	}
	waiting := map[string]rollout.WaitingTarget{}
	for _, t := range plan.Waiting {
		if t.Reason == rollout.DependencyNotReadyReason {
			waiting[t.HostedCluster] = t
		}
	}
	byNamespace := map[string]*convoyv1alpha1.Package{}
	for i := range in.Packages {
		byNamespace[in.Packages[i].Namespace] = &in.Packages[i]
	}
	placer := newPartitioner(in.HostedClusterPackage.Spec.Partition, plan.Partitions)
	hcs := slices.Clone(in.HostedClusters)
	slices.SortFunc(hcs, func(a, b rollout.HostedCluster) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var cells []placedCell
	for _, hc := range hcs {
		if !selected(in.HostedClusterPackage, hc) {
			continue
		}
		key := hc.Namespace + "/" + hc.Name
		pc := placedCell{Cell: Cell{HostedCluster: key}, partition: placer.partitionOf(hc.Labels)}
		pc.pkg = byNamespace[convoyv1alpha1.HostedControlPlaneNamespace(hc.Namespace, hc.Name)]
		if pc.pkg != nil {
			pc.Package = pc.pkg.Namespace + "/" + pc.pkg.Name
		}
		switch f, isFailed := failed[key]; {
		case isFailed:
			pc.State, pc.Reason, pc.Message = StateFailed, f.Reason, f.Message
		case skipped[key].Reason != "":
			t := skipped[key]
			pc.State, pc.Reason, pc.Message, pc.partition = StateSkipped, t.Reason, t.Message, t.Partition
		case waiting[key].Reason != "":
			t := waiting[key]
			pc.State, pc.Reason, pc.Message = StateDependency, t.Reason, t.Message
		default:
			pc.State, pc.Message = packageState(pc.pkg, in.UpdateRevision)
		}
		cells = append(cells, pc)
	}
	return cells
}

// packageState is the state of an eligible target whose Package is pkg (nil when missing).
func packageState(pkg *convoyv1alpha1.Package, update rollout.Revision) (state, message string) {
	switch {
	case pkg == nil:
		return StateWaiting, "no Package yet"
	case !onRevision(pkg, update):
		return StateWaiting, fmt.Sprintf("at commit %s", short(pkg.Spec.Revision))
	case rollout.Progressed(pkg):
		return StateProgressed, ""
	}
	return StateUpdating, ""
}

// onRevision reports whether pkg's spec is the revision's.
func onRevision(pkg *convoyv1alpha1.Package, rev rollout.Revision) bool {
	return pkg.Spec.Revision == rev.Commit && equality.Semantic.DeepEqual(pkg.Spec.PackageTemplateSpec, rev.Template)
}

// gridRows groups cells by partition in the plan's order and keeps the page q of each.
func gridRows(plan *rollout.Plan, cells []placedCell, q RolloutQuery) []GridRow {
	rows := make([]GridRow, 0, len(plan.Partitions))
	index := map[string]int{}
	for _, p := range plan.Partitions {
		index[p.Name] = len(rows)
		rows = append(rows, GridRow{Partition: p.Name, State: p.State, Until: p.Until, Checks: p.Checks,
			Counts: map[string]int{}, Cells: []Cell{}})
	}
	for _, c := range cells {
		i, ok := index[c.partition]
		if !ok {
			index[c.partition] = len(rows)
			i = len(rows)
			rows = append(rows, GridRow{Partition: c.partition, Counts: map[string]int{}, Cells: []Cell{}})
		}
		row := &rows[i]
		row.Total++
		row.Counts[c.State]++
		if q.State != "" && c.State != q.State {
			continue
		}
		if row.Matching >= q.Offset && len(row.Cells) < q.Limit {
			row.Cells = append(row.Cells, c.Cell)
		}
		row.Matching++
	}
	return rows
}

// timeline dates each partition's update: it starts with the first spec update of one of its
// Packages to the update revision, and ends, once the partition is Done, with the last
// transition of those Packages.
func timeline(plan *rollout.Plan, in rollout.Input, cells []placedCell) []Span {
	spans := make([]Span, 0, len(plan.Partitions))
	for _, p := range plan.Partitions {
		span := Span{Partition: p.Name}
		var last time.Time
		for _, c := range cells {
			if c.partition != p.Name || c.pkg == nil || !onRevision(c.pkg, in.UpdateRevision) {
				continue
			}
			if at, ok := specUpdatedAt(c.pkg); ok && (span.Start == nil || at.Before(*span.Start)) {
				span.Start = &at
			}
			last = latest(last, settledAt(c.pkg))
		}
		if p.State == convoyv1alpha1.PartitionDone && span.Start != nil && !last.IsZero() {
			span.End = &last
		}
		spans = append(spans, span)
	}
	return spans
}

// specUpdatedAt reads when the controller last set pkg's spec.
func specUpdatedAt(pkg *convoyv1alpha1.Package) (time.Time, bool) {
	raw, ok := pkg.Annotations[rollout.SpecUpdatedAtAnnotation]
	if !ok {
		return pkg.CreationTimestamp.Time, !pkg.CreationTimestamp.IsZero()
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	return t, err == nil
}

// settledAt is the last transition of pkg's Available and Progressing conditions.
func settledAt(pkg *convoyv1alpha1.Package) time.Time {
	var t time.Time
	for _, c := range pkg.Status.Conditions {
		if c.Type == convoyv1alpha1.AvailableCondition || c.Type == convoyv1alpha1.ProgressingCondition {
			t = latest(t, c.LastTransitionTime.Time)
		}
	}
	return t
}

// latest returns the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// short abbreviates a commit.
func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	if commit == "" {
		return "none"
	}
	return commit
}
