package rollout

import (
	"fmt"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// t0 is the start of every test clock.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	hcpkgName = "addon"
	riskKey   = "hypershift.openshift.io/risk-group"
	clusterNS = "clusters"
)

// revision returns the n-th revision of the test package: its own commit ("<n in hex>eee…"),
// the same template.
// hcpkgUID is the UID of the worlds' HostedClusterPackage.
const hcpkgUID = "uid-of-addon"

// approval returns the approval named name of partition at rev, bound to the worlds'
// HostedClusterPackage.
func approval(name, partition string, rev Revision) Approval {
	return Approval{Name: name, HostedClusterPackageUID: hcpkgUID, Partition: partition, Revision: rev.Name, Commit: rev.Commit}
}

func revision(n int) Revision {
	return Revision{
		Name:   fmt.Sprintf("rev%d", n),
		Number: int64(n),
		Commit: fmt.Sprintf("%02x", n) + strings.Repeat("e", 38),
		Template: convoyv1alpha1.PackageTemplateSpec{
			SourceRef: convoyv1alpha1.SourceReference{Name: "addons", Namespace: "fleet"},
			Path:      "packages/extra-component",
			Interval:  &metav1.Duration{Duration: 10 * time.Minute},
		},
	}
}

// world is a snapshot the planner reads; tests build it, the simulator evolves it.
type world struct {
	hcpkg    *convoyv1alpha1.HostedClusterPackage
	clusters []HostedCluster
	packages map[string]*convoyv1alpha1.Package
	update   Revision
	current  *Revision
	// history holds every revision ever made, oldest first; those that are neither the update
	// nor the current revision are the older revisions.
	history []Revision
	now     time.Time
	// approvals are the RolloutApprovals of the HostedClusterPackage.
	approvals []Approval
	// checkResults are the partitions' check results, as status.partitions[].checks holds them.
	checkResults map[string][]convoyv1alpha1.CheckStatus
}

// newWorld returns a world with a rolling upgrade (maxUnavailable 1) over the static partitions
// early, normal and late, rolling out rev2 over rev1.
func newWorld() *world {
	cur := revision(1)
	return &world{
		hcpkg: &convoyv1alpha1.HostedClusterPackage{
			ObjectMeta: metav1.ObjectMeta{Name: hcpkgName, UID: hcpkgUID, Generation: 1},
			Spec: convoyv1alpha1.HostedClusterPackageSpec{
				Partition: &convoyv1alpha1.PartitionSpec{
					LabelKey: riskKey,
					Order:    convoyv1alpha1.PartitionOrder{Static: []string{"early", "normal", "late"}},
				},
				Strategy: rolling(intstr.FromInt32(1)),
			},
		},
		packages: map[string]*convoyv1alpha1.Package{},
		update:   revision(2),
		current:  &cur,
		history:  []Revision{cur, revision(2)},
		now:      t0,
	}
}

// rolling returns a rolling upgrade strategy with maxUnavailable m.
func rolling(m intstr.IntOrString) convoyv1alpha1.HostedClusterPackageStrategy {
	return convoyv1alpha1.HostedClusterPackageStrategy{
		RollingUpgrade: &convoyv1alpha1.RollingUpgradeStrategy{MaxUnavailable: &m},
	}
}

// alphanumeric switches the world to natural alphanumeric partition order.
func (w *world) alphanumeric() *world {
	w.hcpkg.Spec.Partition.Order = convoyv1alpha1.PartitionOrder{AlphanumericAsc: &convoyv1alpha1.AlphanumericAscOrder{}}
	return w
}

// cluster adds an available HostedCluster in the given risk group ("" = no label).
func (w *world) cluster(name, group string) *HostedCluster {
	hc := HostedCluster{Namespace: clusterNS, Name: name, Labels: map[string]string{"tier": "prod"}, Available: true}
	if group != "" {
		hc.Labels[riskKey] = group
	}
	w.clusters = append(w.clusters, hc)
	return &w.clusters[len(w.clusters)-1]
}

// find returns the HostedCluster named name.
func (w *world) find(name string) *HostedCluster {
	for i := range w.clusters {
		if w.clusters[i].Name == name {
			return &w.clusters[i]
		}
	}
	panic("no HostedCluster " + name)
}

// remove deletes the HostedCluster named name.
func (w *world) remove(name string) {
	for i := range w.clusters {
		if w.clusters[i].Name == name {
			w.clusters = append(w.clusters[:i], w.clusters[i+1:]...)
			return
		}
	}
}

// fleet adds n clusters named "<group>-<i>" to each group.
func (w *world) fleet(n int, groups ...string) *world {
	for _, g := range groups {
		for i := 1; i <= n; i++ {
			w.cluster(fmt.Sprintf("%s-%d", g, i), g)
		}
	}
	return w
}

// namespaceOf returns the HCP namespace of the cluster named name.
func namespaceOf(name string) string {
	return convoyv1alpha1.HostedControlPlaneNamespace(clusterNS, name)
}

// pkg gives the cluster named name a Package whose spec was set to rev at updatedAt and that
// progressed at updatedAt; tests then age or break it.
func (w *world) pkg(name string, rev Revision, updatedAt time.Time) *convoyv1alpha1.Package {
	p := &convoyv1alpha1.Package{
		ObjectMeta: metav1.ObjectMeta{
			Name: hcpkgName, Namespace: namespaceOf(name), Generation: 1,
			Annotations: map[string]string{SpecUpdatedAtAnnotation: FormatSpecUpdatedAt(updatedAt)},
		},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: rev.Template, Revision: rev.Commit},
	}
	setCondition(p, convoyv1alpha1.AvailableCondition, metav1.ConditionTrue, updatedAt, "")
	setCondition(p, convoyv1alpha1.ProgressingCondition, metav1.ConditionFalse, updatedAt, "")
	p.Status.Revision = rev.Commit
	w.packages[p.Namespace] = p
	return p
}

// progressedAll gives every cluster a Package that progressed at rev long ago.
func (w *world) progressedAll(rev Revision) *world {
	for _, hc := range w.clusters {
		w.pkg(hc.Name, rev, t0.Add(-24*time.Hour))
	}
	return w
}

// setCondition sets a condition at p's generation; the transition time changes only with the
// status, as meta.SetStatusCondition does.
func setCondition(p *convoyv1alpha1.Package, t string, s metav1.ConditionStatus, at time.Time, msg string) {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type == t {
			if c.Status != s {
				c.LastTransitionTime = metav1.NewTime(at)
			}
			c.Status, c.ObservedGeneration, c.Message = s, p.Generation, msg
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, metav1.Condition{
		Type: t, Status: s, ObservedGeneration: p.Generation, LastTransitionTime: metav1.NewTime(at), Reason: "Test", Message: msg,
	})
}

// setSpec moves p to rev at time at, as the controller would, and lets the Package controller
// observe the new generation: Progressing turns True while Available keeps its status (the old
// revision still serves).
func setSpec(p *convoyv1alpha1.Package, rev Revision, at time.Time) {
	p.Spec.PackageTemplateSpec, p.Spec.Revision = rev.Template, rev.Commit
	p.Generation++
	p.Annotations[SpecUpdatedAtAnnotation] = FormatSpecUpdatedAt(at)
	for i := range p.Status.Conditions {
		p.Status.Conditions[i].ObservedGeneration = p.Generation
	}
	setCondition(p, convoyv1alpha1.ProgressingCondition, metav1.ConditionTrue, at, "applying "+shortCommit(rev.Commit))
}

// progress marks p as done with its spec at time at.
func progress(p *convoyv1alpha1.Package, at time.Time) {
	p.Status.Revision = p.Spec.Revision
	setCondition(p, convoyv1alpha1.AvailableCondition, metav1.ConditionTrue, at, "")
	setCondition(p, convoyv1alpha1.ProgressingCondition, metav1.ConditionFalse, at, "")
}

// input returns the planner's input for the world, Packages sorted by namespace.
func (w *world) input() Input {
	in := Input{
		HostedClusterPackage: w.hcpkg,
		HostedClusters:       w.clusters,
		UpdateRevision:       w.update,
		CurrentRevision:      w.current,
		Approvals:            w.approvals,
		CheckResults:         w.checkResults,
		Now:                  w.now,
	}
	for _, rev := range w.history {
		if rev.Name != w.update.Name && (w.current == nil || rev.Name != w.current.Name) {
			in.OlderRevisions = append(in.OlderRevisions, rev)
		}
	}
	for _, p := range w.packages {
		in.Packages = append(in.Packages, *p)
	}
	sort.Slice(in.Packages, func(i, j int) bool { return in.Packages[i].Namespace < in.Packages[j].Namespace })
	return in
}

// describe lists a plan's changes as "create|update <cluster> <revision> <reason>" and
// "delete <namespace>/<name> <reason>".
func describe(plan *Plan) []string {
	var out []string
	for _, c := range plan.Creates {
		out = append(out, fmt.Sprintf("create %s %s %s", strings.TrimPrefix(c.HostedCluster, clusterNS+"/"), c.Revision.Name, c.Reason))
	}
	for _, c := range plan.Updates {
		out = append(out, fmt.Sprintf("update %s %s %s", strings.TrimPrefix(c.HostedCluster, clusterNS+"/"), c.Revision.Name, c.Reason))
	}
	for _, d := range plan.Deletes {
		out = append(out, fmt.Sprintf("delete %s %s", d.Package, d.Reason))
	}
	return out
}

// states lists each partition as "<name>=<state>".
func states(plan *Plan) []string {
	var out []string
	for _, p := range plan.Partitions {
		out = append(out, p.Name+"="+p.State)
	}
	return out
}

// compute plans the world and fails the test on an error.
func compute(g Gomega, w *world) *Plan {
	plan, err := Compute(w.input())
	g.Expect(err).NotTo(HaveOccurred())
	return plan
}
