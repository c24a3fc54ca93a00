package rolloutcontroller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/rollout/promotion"
	"github.com/convoy-gitops/convoy/sources"
)

// historyLimit bounds the commits from the GitSource's head back among which a promoted one is
// looked for.
const historyLimit = 500

// promotionRecheck is when a pass whose promotion is held by an unreadable bus looks again,
// should no GitSource event come first.
const promotionRecheck = 30 * time.Second

// Identity names this controller's management cluster and its sector (--management-cluster,
// --sector); the zero value publishes nothing and promotes nothing by hand.
type Identity struct {
	// ManagementCluster is this management cluster's name, a DNS label.
	ManagementCluster string
	// Sector is its sector's name, a DNS label.
	Sector string
}

// Validate checks that both names are DNS labels, or both empty.
func (id Identity) Validate() error {
	if id == (Identity{}) {
		return nil
	}
	return errors.Join(promotion.ValidName("--management-cluster", id.ManagementCluster),
		promotion.ValidName("--sector", id.Sector))
}

// PromotionBus is what promotion reads of a GitSource's repository: the sector map at a
// commit, the records of the promotion refs its last poll brought in, and its history. The
// GitSource store is one.
type PromotionBus interface {
	Open(ctx context.Context, key sources.Key, commit string) (fs.FS, error)
	PromotionRecords(key sources.Key, maxBytes int64, paths []string) (map[string][]byte, error)
	FirstParents(ctx context.Context, key sources.Key, commit, until string, limit int) ([]string, error)
	IsAncestor(ctx context.Context, key sources.Key, ancestor, commit string) (bool, error)
}

// reconcilePromotion, under spec.promotion with upstream sectors, replaces s.update's commit
// candidate (the GitSource's head) with the newest commit the upstream sectors let through
// (package promotion), and fills s.promotion (the status) and s.promotionGate (the planner's
// Promotion gate). A bus that cannot be read holds: the update revision keeps its commit and
// nothing starts; before any commit came through the pass waits (AwaitingPromotion).
func (r *HostedClusterPackageReconciler) reconcilePromotion(ctx context.Context, s *scope, key sources.Key, head string) (string, error) {
	spec := s.obj.Spec.Promotion
	for _, u := range spec.After {
		if u.Sector == r.Identity.Sector {
			return "", pass.Stallf(convoyv1alpha1.InvalidSpecReason,
				"spec.promotion.after names sector %s, this management cluster's own: a sector cannot wait for itself", u.Sector)
		}
	}
	current, err := r.updateCommit(ctx, s, key.Namespace)
	if err != nil {
		return "", err
	}
	s.promotion = &convoyv1alpha1.PromotionStatus{HeadCommit: head}
	s.obj.Status.Promotion = s.promotion // written even when the pass waits
	d, err := r.decidePromotion(ctx, s, spec, key, head, current)
	if err != nil {
		// A record's content is quoted in its errors: bounded like every message a tenant writes.
		s.promotion.Message = promotionHoldPrefix + rollout.BoundSample(err.Error())
		// The sector goes on running the commit it runs: still the one promoted.
		s.promotion.Commit = current
		if b := s.before.Promotion; b != nil && b.Commit == current {
			s.promotion.ByHand = b.ByHand
		}
		if current == "" {
			return "", pass.Waitf(convoyv1alpha1.AwaitingPromotionReason, promotionRecheck, "%s", s.promotion.Message)
		}
		s.promotionGate.Hold = s.promotion.Message
		s.promotionWake = s.now.Add(promotionRecheck)
		return current, nil
	}
	s.promotion.Commit, s.promotion.ByHand, s.promotion.Upstream = d.Commit, d.ByHand, upstreamStatus(d.Head)
	s.promotionWake = d.NextAt
	if spec.Bus == convoyv1alpha1.PromotionBusCommitStatuses {
		// No poll of the GitSource tells of new statuses: the forge is read again after a while.
		s.promotionWake = earliest(s.promotionWake, s.now.Add(r.statusRecheck()))
	}
	if d.Commit == "" {
		return "", pass.Waitf(convoyv1alpha1.AwaitingPromotionReason, untilWake(s), "No commit has come through the upstream sectors yet: %s.",
			promotion.Summary(d.Head))
	}
	if why, ok := d.Withdrawn[d.Commit]; ok && !d.ByHand {
		s.promotionGate = rollout.PromotionGate{Withdrawn: true,
			Hold: fmt.Sprintf("Commit %s was withdrawn upstream (%s): nothing more starts at it.", shortCommit(d.Commit), why)}
		s.promotion.Message = s.promotionGate.Hold
	}
	if head != d.Commit {
		s.promotionGate.Waiting = fmt.Sprintf("Commit %s waits for the upstream sectors: %s.", shortCommit(head), promotion.Summary(d.Head))
	}
	return d.Commit, nil
}

// untilWake returns how long until s.promotionWake; 0 when none is set.
func untilWake(s *scope) time.Duration {
	if s.promotionWake.IsZero() {
		return 0
	}
	return max(s.promotionWake.Sub(s.now), time.Second)
}

// decidePromotion reads the bus and decides. Its errors say why the bus cannot be trusted.
func (r *HostedClusterPackageReconciler) decidePromotion(ctx context.Context, s *scope, spec *convoyv1alpha1.PromotionSpec,
	key sources.Key, head, current string) (promotion.Decision, error) {
	if r.Bus == nil {
		return promotion.Decision{}, errors.New("this controller has no promotion bus")
	}
	gs, err := r.busReadable(ctx, key, spec.Bus)
	if err != nil {
		return promotion.Decision{}, err
	}
	sectors, err := r.sectorMap(ctx, key, head, spec.SectorMapPath)
	if err != nil {
		return promotion.Decision{}, err
	}
	in := promotion.Input{Key: promotionKey(s.obj), Sectors: sectors, Current: current, Now: s.now}
	for _, u := range spec.After {
		in.After = append(in.After, promotion.Upstream{Sector: u.Sector, Soak: time.Duration(u.SoakSeconds) * time.Second})
	}
	// Note: Decide never walks past the current commit, so neither does the history.
	if in.History, err = r.Bus.FirstParents(ctx, key, head, current, historyLimit); err != nil {
		return promotion.Decision{}, fmt.Errorf("reading the history of %s: %w", shortCommit(head), err)
	}
	if spec.Bus == convoyv1alpha1.PromotionBusCommitStatuses {
		in.Records, err = r.statusRecords(ctx, gs, in)
	} else {
		in.Records, err = r.upstreamRecords(key, in)
	}
	if err != nil {
		return promotion.Decision{}, err
	}
	if in.Manual, err = r.manualPromotions(ctx, s.obj); err != nil {
		return promotion.Decision{}, err
	}
	d, err := promotion.Decide(in)
	if err != nil {
		return d, err
	}
	return r.neverBack(ctx, key, in, d)
}

// neverBack keeps the sector on its current commit when the commit decided does not descend
// from it: the current commit left the first-parent history (a merge of the old head, a
// force-push), so Decide's walk could not stop at it, and moving to the commit decided could
// move the sector back. A person promotes by hand out of that.
func (r *HostedClusterPackageReconciler) neverBack(ctx context.Context, key sources.Key, in promotion.Input,
	d promotion.Decision) (promotion.Decision, error) {
	if in.Current == "" || d.Commit == in.Current || d.Commit == "" || slices.Contains(in.History, in.Current) {
		return d, nil
	}
	descends, err := r.Bus.IsAncestor(ctx, key, in.Current, d.Commit)
	if err != nil {
		return promotion.Decision{}, fmt.Errorf("checking that %s descends from %s: %w", shortCommit(d.Commit), shortCommit(in.Current), err)
	}
	if !descends {
		d.Commit, d.ByHand = in.Current, in.Manual[in.Current]
	}
	return d, nil
}

// busReadable refuses a GitSource whose last poll failed, or, on the GitRefs bus, could not
// read the promotion refs: the records it holds may be stale. It returns the GitSource.
func (r *HostedClusterPackageReconciler) busReadable(ctx context.Context, key sources.Key,
	bus convoyv1alpha1.PromotionBus) (*convoyv1alpha1.GitSource, error) {
	gs := &convoyv1alpha1.GitSource{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name}, gs); err != nil {
		return nil, fmt.Errorf("reading GitSource %s: %w", key, err)
	}
	if c := apimeta.FindStatusCondition(gs.Status.Conditions, convoyv1alpha1.FetchFailedCondition); c != nil && c.Status == metav1.ConditionTrue {
		return nil, fmt.Errorf("GitSource %s cannot poll its repository: %s", key, c.Message)
	}
	if bus == convoyv1alpha1.PromotionBusCommitStatuses {
		if gs.Spec.CommitStatus == nil {
			return nil, fmt.Errorf("spec.promotion.bus is CommitStatuses but GitSource %s has no spec.commitStatus to read them from", key)
		}
		return gs, nil
	}
	if gs.Spec.Ref.Commit != "" {
		return nil, fmt.Errorf("GitSource %s follows a commit: its polls do not read the promotion refs", key)
	}
	if p := gs.Status.Promotion; p != nil && p.Error != "" {
		return nil, fmt.Errorf("GitSource %s cannot read the promotion refs: %s", key, p.Error)
	}
	return gs, nil
}

// sectorMap reads and parses the sector map at commit.
func (r *HostedClusterPackageReconciler) sectorMap(ctx context.Context, key sources.Key, commit, path string) (promotion.SectorMap, error) {
	if path == "" {
		path = promotion.DefaultSectorMapPath
	}
	fsys, err := r.Bus.Open(ctx, key, commit)
	if err != nil {
		return promotion.SectorMap{}, fmt.Errorf("reading commit %s: %w", shortCommit(commit), err)
	}
	f, err := fsys.Open(strings.TrimPrefix(path, "./"))
	if err != nil {
		return promotion.SectorMap{}, fmt.Errorf("the sector map %s at commit %s: %w", path, shortCommit(commit), err)
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, promotion.MaxSectorMapBytes+1))
	if err != nil {
		return promotion.SectorMap{}, fmt.Errorf("reading the sector map %s: %w", path, err)
	}
	return promotion.ParseSectorMap(path+" at commit "+shortCommit(commit), data)
}

// upstreamRecords returns the records of in.Key published by the management clusters of the
// upstream sectors, by management cluster. A ref of an upstream management cluster filed under
// another sector than the map's, or a record that does not decode, is an error.
func (r *HostedClusterPackageReconciler) upstreamRecords(key sources.Key, in promotion.Input) (map[string]promotion.Record, error) {
	var paths []string
	for _, u := range in.After {
		members, _ := in.Sectors.Members(u.Sector)
		for _, mc := range members {
			paths = append(paths, u.Sector+"/"+mc+"/"+in.Key)
		}
	}
	raw, err := r.Bus.PromotionRecords(key, promotion.MaxRecordBytes, paths)
	if err != nil {
		return nil, err
	}
	out := map[string]promotion.Record{}
	for _, u := range in.After {
		members, _ := in.Sectors.Members(u.Sector)
		for _, mc := range members {
			data, ok := raw[u.Sector+"/"+mc+"/"+in.Key]
			if !ok {
				continue
			}
			rec, err := promotion.DecodeRecord(data)
			if err != nil {
				return nil, fmt.Errorf("the record of management cluster %s (sector %s): %w", mc, u.Sector, err)
			}
			out[mc] = rec
		}
	}
	return out, nil
}

// manualPromotions returns the commits that ManualPromotions (and legacy PromotionApprovals)
// let into this controller's sector for the HostedClusterPackage hcpkg: those that name it by
// UID, from the namespace of its GitSource (a legacy one by its owner reference, from the
// cluster scope).
func (r *HostedClusterPackageReconciler) manualPromotions(ctx context.Context, hcpkg *convoyv1alpha1.HostedClusterPackage) (map[string]bool, error) {
	out := map[string]bool{}
	if r.Identity.Sector == "" {
		return out, nil
	}
	byName := client.MatchingFields{approvalIndex: hcpkg.Name}
	list := &convoyv1alpha1.ManualPromotionList{}
	if err := r.Client.List(ctx, list, byName); err != nil {
		return nil, fmt.Errorf("listing ManualPromotions: %w", err)
	}
	for _, a := range list.Items {
		if a.Namespace == hcpkg.Spec.Template.Spec.SourceRef.Namespace && types.UID(a.Spec.HostedClusterPackageUID) == hcpkg.UID &&
			a.Spec.Sector == r.Identity.Sector {
			out[a.Spec.Commit] = true
		}
	}
	legacy := &convoyv1alpha1.PromotionApprovalList{}
	if err := r.Client.List(ctx, legacy, byName); err != nil {
		return nil, fmt.Errorf("listing PromotionApprovals: %w", err)
	}
	for _, a := range legacy.Items {
		if uid := rollout.OwnerUID(a.OwnerReferences, hcpkg.Name); uid != "" && uid == hcpkg.UID && a.Spec.Sector == r.Identity.Sector {
			out[a.Spec.Commit] = true
		}
	}
	return out, nil
}

// updateCommit returns the commit of status.updateRevision; "" when there is none yet.
func (r *HostedClusterPackageReconciler) updateCommit(ctx context.Context, s *scope, namespace string) (string, error) {
	name := s.obj.Status.UpdateRevision
	if name == "" {
		return "", nil
	}
	cr := &appsv1.ControllerRevision{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cr); err != nil {
		// Note: a revision not in the cache yet must not read as "none": promotion would then
		// be free to pick an older commit.
		return "", fmt.Errorf("reading the update revision %s: %w", name, err)
	}
	sr, err := decodeRevision(cr)
	if err != nil {
		return "", err
	}
	return sr.rev.Commit, nil
}

// promotionKey returns the key that matches the HostedClusterPackage across management clusters.
func promotionKey(obj *convoyv1alpha1.HostedClusterPackage) string {
	if p := obj.Spec.Promotion; p != nil && p.Key != "" {
		return p.Key
	}
	return obj.Name
}

// upstreamStatus turns the decision's view of the head commit into status.
func upstreamStatus(views []promotion.SectorView) []convoyv1alpha1.UpstreamSectorStatus {
	out := make([]convoyv1alpha1.UpstreamSectorStatus, 0, len(views))
	for _, v := range views {
		st := convoyv1alpha1.UpstreamSectorStatus{Sector: v.Sector, CompletedAt: metaTimeOf(v.CompletedAt)}
		for _, c := range v.ManagementClusters {
			mc := convoyv1alpha1.ManagementClusterStatus{Name: c.Name, State: string(c.Record.State)}
			if c.Record.State == promotion.Progressing {
				mc.Progress = fmt.Sprintf("%d/%d partitions, %d/%d clusters", c.Record.PartitionsDone, c.Record.Partitions,
					c.Record.ClustersDone, c.Record.Clusters)
			}
			st.ManagementClusters = append(st.ManagementClusters, mc)
		}
		out = append(out, st)
	}
	return out
}

// metaTimeOf returns t as a *metav1.Time, nil for the zero time.
func metaTimeOf(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}
