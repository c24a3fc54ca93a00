package fleetview

import (
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// PromotionForecast says when the GitSource's newest commit can enter this management cluster's
// sector, from what the last pass read of the upstream sectors (status.promotion): once every
// upstream sector completed it, at the latest of their completions plus their soaks.
type PromotionForecast struct {
	// Commit is the GitSource's newest commit, which the upstream sectors are reported for.
	Commit string `json:"commit"`
	// Promoted is the newest commit that came through, which the sector rolls out now.
	Promoted string `json:"promoted,omitempty"`
	// Start is when Commit can come at the earliest; nil while an upstream sector has not
	// completed it, or when it never will.
	Start *metav1.Time `json:"start,omitempty"`
	// Sectors say, per upstream sector, what it did and when its soak ends.
	Sectors []string `json:"sectors"`
	// Never says why the commit will not come through the upstream sectors (one of them failed
	// or rejected it); only a ManualPromotion lets it in then.
	Never string `json:"never,omitempty"`
}

// promotionForecast forecasts the entry of the GitSource's head into the sector, when the
// HostedClusterPackage has upstream sectors and its head is not the promoted commit.
func promotionForecast(h *convoyv1alpha1.HostedClusterPackage, now time.Time) *PromotionForecast {
	spec, st := h.Spec.Promotion, h.Status.Promotion
	if spec == nil || len(spec.After) == 0 || st == nil || st.HeadCommit == "" || st.HeadCommit == st.Commit ||
		len(st.Upstream) == 0 {
		return nil // nothing promotes, or the bus did not read (status.promotion.message says why)
	}
	soaks := map[string]time.Duration{}
	for _, u := range spec.After {
		soaks[u.Sector] = time.Duration(u.SoakSeconds) * time.Second
	}
	f := &PromotionForecast{Commit: st.HeadCommit, Promoted: st.Commit}
	var start time.Time
	complete := len(st.Upstream) > 0
	for _, u := range st.Upstream {
		line, never := sectorForecast(u, soaks[u.Sector], now)
		f.Sectors = append(f.Sectors, line)
		if never != "" && f.Never == "" {
			f.Never = never
		}
		if u.CompletedAt == nil {
			complete = false
		} else if end := u.CompletedAt.Add(soaks[u.Sector]); end.After(start) {
			start = end
		}
	}
	if complete && f.Never == "" {
		t := metav1.NewTime(start)
		f.Start = &t
	}
	return f
}

// sectorForecast says what one upstream sector did with the commit, and why the commit never
// comes when one of its management clusters failed or rejected it.
func sectorForecast(u convoyv1alpha1.UpstreamSectorStatus, soak time.Duration, now time.Time) (string, string) {
	var did []string
	never := ""
	for _, mc := range u.ManagementClusters {
		switch mc.State {
		case "":
			did = append(did, mc.Name+" not started")
		case "Progressing":
			did = append(did, mc.Name+" progressing "+mc.Progress)
		default:
			did = append(did, mc.Name+" "+strings.ToLower(mc.State))
			// Note: a commit superseded upstream before it completed never comes (rule 4 of
			// rollout/promotion); one failed or rejected is withdrawn.
			if mc.State == "Failed" || mc.State == "Rejected" || mc.State == "Superseded" {
				never = fmt.Sprintf("management cluster %s of sector %s %s it", mc.Name, u.Sector, strings.ToLower(mc.State))
			}
		}
	}
	line := u.Sector + ": " + strings.Join(did, ", ")
	switch {
	case u.CompletedAt != nil:
		line += "; soak of " + ShortDuration(soak) + " until " + WhenText(u.CompletedAt.Add(soak), now)
	case soak > 0:
		line += "; then a soak of " + ShortDuration(soak)
	}
	return line, never
}

// writePromotionText prints the promotion forecast, if any.
func (f *Forecast) writePromotionText(w io.Writer) {
	p := f.Promotion
	if p == nil {
		return
	}
	fmt.Fprintf(w, "\nPromotion: commit %s %s\n", shortID(p.Commit), f.promotionStartText())
	for _, s := range p.Sectors {
		fmt.Fprintf(w, "  %s\n", s)
	}
}

// promotionStartText says when the commit can enter the sector.
func (f *Forecast) promotionStartText() string {
	p := f.Promotion
	switch {
	case p.Never != "":
		return "will not come through the upstream sectors (" + p.Never + "); only `convoy promote` lets it in"
	case p.Start == nil:
		return "waits for the upstream sectors to complete it"
	case !p.Start.After(f.now):
		return "comes through now"
	}
	return "can start at " + WhenText(p.Start.Time, f.now)
}

// shortID is the first 12 characters of a commit id.
func shortID(commit string) string { return commit[:min(len(commit), 12)] }
