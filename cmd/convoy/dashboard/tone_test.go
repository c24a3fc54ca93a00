package dashboard

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/rollout/fleetview"
)

// conditionTypesFile declares the API's condition types, seen from this package.
const conditionTypesFile = "../../../api/v1alpha1/condition_types.go"

// TestEveryConditionTypeHasAPolarity reads the condition types the API declares (the constants
// named *Condition) so that a new one cannot reach the page without a meaning.
func TestEveryConditionTypeHasAPolarity(t *testing.T) {
	g := NewWithT(t)
	f, err := parser.ParseFile(token.NewFileSet(), conditionTypesFile, nil, 0)
	g.Expect(err).NotTo(HaveOccurred())
	var types []string
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || len(spec.Values) != 1 || !strings.HasSuffix(spec.Names[0].Name, "Condition") {
			return true
		}
		lit, ok := spec.Values[0].(*ast.BasicLit)
		g.Expect(ok).To(BeTrue(), "%s is not a string literal", spec.Names[0].Name)
		value, err := strconv.Unquote(lit.Value)
		g.Expect(err).NotTo(HaveOccurred())
		types = append(types, value)
		return true
	})
	g.Expect(types).To(ContainElements(convoyv1alpha1.ReadyCondition, convoyv1alpha1.HasPausedPackageCondition))
	for _, ct := range types {
		g.Expect(polarities).To(HaveKey(ct), "condition type %s has no polarity on the dashboard", ct)
	}
	g.Expect(polarities).To(HaveLen(len(types)), "a polarity for a condition type the API does not declare")
}

// cond returns a condition of type t with status s and reason r.
func cond(t string, s metav1.ConditionStatus, r string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: r}
}

func TestConditionTonesSayWhatConditionsMean(t *testing.T) {
	const (
		yes, no, unknown = metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	)
	cases := map[string]struct {
		conds []metav1.Condition
		want  []Tone
	}{
		"a HostedClusterPackage done": {
			conds: []metav1.Condition{cond("Ready", yes, "Succeeded"), cond("Available", yes, "EnoughPackagesAvailable"),
				cond("Progressing", no, "AllPackagesProgressed"), cond("HasPausedPackage", no, "NoPackagePaused")},
			want: []Tone{ToneGood, ToneGood, ToneGood, ToneGood},
		},
		"a HostedClusterPackage rolling out, held by a soak": {
			conds: []metav1.Condition{cond("Ready", no, "Gated"), cond("Available", yes, "EnoughPackagesAvailable"),
				cond("Progressing", yes, "NotAllPackagesProgressed"), cond("HasPausedPackage", no, "NoPackagePaused"),
				cond("Reconciling", yes, "Gated")},
			want: []Tone{ToneProgress, ToneGood, ToneProgress, ToneGood, ToneProgress},
		},
		"a HostedClusterPackage stalled by a failed Package": {
			conds: []metav1.Condition{cond("Ready", no, "RolloutBlocked"), cond("Available", no, "NotEnoughPackagesAvailable"),
				cond("Progressing", yes, "NotAllPackagesProgressed"), cond("HasPausedPackage", yes, "AtLeastOnePackagePaused"),
				cond("Stalled", yes, "RolloutBlocked")},
			want: []Tone{ToneBad, ToneBad, ToneProgress, ToneHeld, ToneBad},
		},
		"a Package retrying after a transient error": {
			conds: []metav1.Condition{cond("Ready", no, "HostedClusterUnreachable"), cond("Reconciling", yes, "ProgressingWithRetry"),
				cond("Paused", no, "NotPaused")},
			want: []Tone{ToneHeld, ToneHeld, ToneGood},
		},
		"a paused Package": {
			conds: []metav1.Condition{cond("Ready", yes, "RevisionAvailable"), cond("Paused", yes, "Paused")},
			want:  []Tone{ToneGood, ToneHeld},
		},
		"a GitSource that cannot fetch, with no Reconciling": {
			conds: []metav1.Condition{cond("Ready", no, "GitOperationFailed"), cond("FetchFailed", yes, "GitOperationFailed")},
			want:  []Tone{ToneBad, ToneBad},
		},
		"unknown statuses and types": {
			conds: []metav1.Condition{cond("Ready", unknown, "Progressing"), cond("ShardsReady", no, "ShardWithoutReplica"),
				cond("SomethingElse", yes, "Why")},
			want: []Tone{ToneUnknown, ToneBad, ToneUnknown},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var got []Tone
			for _, c := range conditionsOf(tc.conds) {
				got = append(got, c.Tone)
			}
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestPageConditionsCarryTheirTones(t *testing.T) {
	g := NewWithT(t)
	h := &convoyv1alpha1.HostedClusterPackage{ObjectMeta: metav1.ObjectMeta{Name: "addon"}}
	h.Status.Conditions = []metav1.Condition{cond("HasPausedPackage", metav1.ConditionFalse, "NoPackagePaused")}
	raw, err := json.Marshal(fleetItem(&fleetview.Snapshot{HostedClusterPackage: h}))
	g.Expect(err).NotTo(HaveOccurred())
	var page map[string]any
	g.Expect(json.Unmarshal(raw, &page)).To(Succeed())
	g.Expect(page["conditions"]).To(ConsistOf(And(HaveKeyWithValue("type", "HasPausedPackage"), HaveKeyWithValue("tone", "good"))))
}
