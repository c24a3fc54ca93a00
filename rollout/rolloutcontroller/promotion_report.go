package rolloutcontroller

import (
	"context"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/convoy-gitops/convoy/rollout"
)

// Reasons of the promotion's events.
const (
	// PromotedReason: a new commit came through the upstream sectors (or by hand) and becomes
	// the update revision's.
	PromotedReason = "Promoted"
	// PromotionHeldReason: the bus cannot be read, and promotion holds until it can.
	PromotionHeldReason = "PromotionHeld"
)

// promotionHoldPrefix starts status.promotion.message while the bus cannot be read.
const promotionHoldPrefix = "Promotion holds: "

// Metrics of promotion across management clusters.
var (
	promotionHeldGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "convoy_promotion_held",
		Help: "1 while the promotion of a HostedClusterPackage holds because the bus (promotion refs, sector map, history) cannot be read, else 0.",
	}, []string{hcpkgLabel})

	promotionBehindGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "convoy_promotion_waiting",
		Help: "1 while the GitSource's head of a HostedClusterPackage with upstream sectors waits for them (its commit is not the promoted one, and the bus reads), else 0.",
	}, []string{hcpkgLabel})

	promotionPushes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convoy_promotion_record_pushes_total",
		Help: "Pushes of this management cluster's promotion records, by outcome (success, failure).",
	}, []string{outcomeLabel})
)

func init() {
	metrics.Registry.MustRegister(promotionHeldGauge, promotionBehindGauge, promotionPushes)
}

// reportPromotion sets the promotion's gauges of the pass and announces, by an event and a log
// line, a newly promoted commit and a bus that newly holds promotion. Like the partitions'
// announcements, each is made against what this process's previous pass wrote
// (promotionNotes) as well as the status the pass started from, which may lag it.
func (r *HostedClusterPackageReconciler) reportPromotion(ctx context.Context, s *scope) {
	name, after := s.obj.Name, s.promotion
	if after == nil {
		// Note: a pass that failed before promotion was decided says nothing of it.
		// Only a HostedClusterPackage that had a promotion has gauges to drop: the others, most
		// of them, cost nothing here on each pass.
		if p := s.obj.Spec.Promotion; p == nil || len(p.After) == 0 {
			if _, had := r.promoted.LoadAndDelete(name); had {
				promotionHeldGauge.DeleteLabelValues(name)
				promotionBehindGauge.DeleteLabelValues(name)
			}
		}
		return
	}
	held := strings.HasPrefix(after.Message, promotionHoldPrefix)
	promotionHeldGauge.WithLabelValues(name).Set(boolValue(held))
	promotionBehindGauge.WithLabelValues(name).Set(boolValue(!held && after.Commit != after.HeadCommit))
	before := promotionNote{}
	if b := s.before.Promotion; b != nil {
		before = promotionNote{commit: b.Commit, held: strings.HasPrefix(b.Message, promotionHoldPrefix)}
	}
	last, seen := r.promoted.Swap(name, promotionNote{commit: after.Commit, held: held})
	if seen {
		before = last.(promotionNote)
	}
	log := ctrl.LoggerFrom(ctx)
	if after.Commit != "" && after.Commit != before.commit {
		how := "through the upstream sectors"
		if after.ByHand {
			how = "by hand (a ManualPromotion)"
		}
		r.event(s, corev1.EventTypeNormal, PromotedReason, "Commit %s came %s", shortCommit(after.Commit), how)
		log.Info("Commit promoted", "commit", after.Commit, "byHand", after.ByHand)
	}
	if held && !before.held {
		r.event(s, corev1.EventTypeWarning, PromotionHeldReason, "%s", rollout.BoundSample(after.Message))
		log.Info("Promotion held", "message", rollout.BoundSample(after.Message))
	}
}

// promotionNote is what a pass wrote of the promotion: the commit promoted, and whether the bus
// held it.
type promotionNote struct {
	commit string
	held   bool
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
