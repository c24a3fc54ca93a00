package rollout

import (
	"slices"
	"strings"
	"time"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// partition is the group of targets that share a value of the partition label.
type partition struct {
	name    string
	index   int
	targets []*target

	// done: every eligible target is on the update revision and has progressed for
	// minReadySeconds.
	done bool

	// started: a target is on the update revision, so the partition's gates are passed;
	// passed: done, or done but for failures the failure policy tolerates (tolerateFailures).
	started bool
	passed  bool

	// hold is the gate (a soak, an approval) that keeps the partition from starting; nil when
	// none does. shown is the state a gate gives the partition (Soaking, AwaitingApproval,
	// OutsideWindow), until when that ends; empty and zero otherwise.
	hold  *convoyv1alpha1.RolloutGate
	shown string
	until time.Time

	// checks are the partition's checks and their results (loadChecks).
	checks partitionChecks
}

// partitionTargets groups the targets by their partition label, orders the groups, puts
// p.targets in rollout order and finds the frontier. Without a partition spec every target is in
// the one "unknown" partition.
func (p *planner) partitionTargets() {
	spec := p.in.HostedClusterPackage.Spec.Partition
	groups, unknown := groupTargets(spec, p.targets)
	for _, value := range orderedValues(spec, groups) {
		p.addPartition(value, groups[value])
	}
	if len(unknown) > 0 {
		p.addPartition(convoyv1alpha1.UnknownPartition, unknown)
	}
	p.targets = p.targets[:0]
	p.frontier = len(p.partitions)
	for _, part := range p.partitions {
		p.targets = append(p.targets, part.targets...)
		if !part.done && p.frontier == len(p.partitions) {
			p.frontier = part.index
		}
	}
}

// addPartition appends a partition with the given targets, which stay in their order.
func (p *planner) addPartition(name string, targets []*target) {
	part := &partition{name: name, index: len(p.partitions), targets: targets, done: true}
	for _, t := range targets {
		t.partition = part
		part.done = part.done && t.done()
	}
	p.partitions = append(p.partitions, part)
}

// groupTargets splits targets by partition (partitionOf); unknown holds the targets of the
// implicit last partition.
func groupTargets(spec *convoyv1alpha1.PartitionSpec, targets []*target) (map[string][]*target, []*target) {
	groups := map[string][]*target{}
	var unknown []*target
	listed := staticValues(spec)
	for _, t := range targets {
		name := partitionOf(spec, listed, t.cluster.Labels)
		if name == convoyv1alpha1.UnknownPartition {
			unknown = append(unknown, t)
			continue
		}
		groups[name] = append(groups[name], t)
	}
	return groups, unknown
}

// partitionOf names the partition of a HostedCluster with labels: the value of the partition
// label; for a value a static order does not list, the "*" partition when the order has one;
// and "unknown" for no label, an empty value, or an unlisted value without "*". listed is
// staticValues(spec).
func partitionOf(spec *convoyv1alpha1.PartitionSpec, listed map[string]bool, labels map[string]string) string {
	value := partitionValue(spec, labels)
	switch {
	case value == "":
		return convoyv1alpha1.UnknownPartition
	case listed == nil || (listed[value] && value != convoyv1alpha1.UnlistedPartition):
		return value
	case listed[convoyv1alpha1.UnlistedPartition]:
		return convoyv1alpha1.UnlistedPartition
	}
	return convoyv1alpha1.UnknownPartition
}

// partitionValue returns the value of the partition label, or "" without a partition spec.
func partitionValue(spec *convoyv1alpha1.PartitionSpec, labels map[string]string) string {
	if spec == nil {
		return ""
	}
	return labels[spec.LabelKey]
}

// staticValues returns the set of values a static order lists; nil for alphanumeric order.
func staticValues(spec *convoyv1alpha1.PartitionSpec) map[string]bool {
	if spec == nil || len(spec.Order.Static) == 0 {
		return nil
	}
	set := make(map[string]bool, len(spec.Order.Static))
	for _, v := range spec.Order.Static {
		set[v] = true
	}
	return set
}

// comparePartitions orders two partition names (partitionOf) the way the rollout visits
// them: by position in a static order, else naturally; "unknown" last.
func comparePartitions(spec *convoyv1alpha1.PartitionSpec, a, b string) int {
	rank := func(name string) int {
		if name == convoyv1alpha1.UnknownPartition {
			return 1
		}
		return 0
	}
	if c := rank(a) - rank(b); c != 0 || a == b {
		return c
	}
	if spec != nil && len(spec.Order.Static) > 0 {
		return slices.Index(spec.Order.Static, a) - slices.Index(spec.Order.Static, b)
	}
	return compareNatural(a, b)
}

// orderedValues returns the partition values in rollout order: the static list as written
// (listed values without targets included), else the values present in natural order.
func orderedValues(spec *convoyv1alpha1.PartitionSpec, groups map[string][]*target) []string {
	if listed := staticValues(spec); listed != nil {
		return spec.Order.Static
	}
	values := make([]string, 0, len(groups))
	for v := range groups {
		values = append(values, v)
	}
	slices.SortFunc(values, compareNatural)
	return values
}

// compareNatural orders strings so that runs of digits compare as numbers ("2" before "10",
// "node-9" before "node-10"); other runs compare byte-wise. Strings equal as numbers ("01" and
// "1") fall back to byte order, so the order is total.
func compareNatural(a, b string) int {
	x, y := a, b
	for x != "" && y != "" {
		var cx, cy string
		cx, x = nextRun(x)
		cy, y = nextRun(y)
		if c := compareRuns(cx, cy); c != 0 {
			return c
		}
	}
	if c := len(x) - len(y); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// nextRun splits s after its first run of digits or of non-digits.
func nextRun(s string) (run, rest string) {
	digits := isDigit(s[0])
	i := 1
	for i < len(s) && isDigit(s[i]) == digits {
		i++
	}
	return s[:i], s[i:]
}

// compareRuns compares two runs: numerically when both are digits, else byte-wise.
func compareRuns(a, b string) int {
	if !isDigit(a[0]) || !isDigit(b[0]) {
		return strings.Compare(a, b)
	}
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
