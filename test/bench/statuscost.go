package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// The writecost scenario says what makes a Package status patch cost several ConfigMap applies:
// it writes variants of the status, each to its own Packages, and the same bytes to a ConfigMap,
// in rounds that alternate the variants, and reports each variant's API-server CPU (kube-apiserver
// and etcd) per write as a ratio to a ConfigMap apply. Ratios of interleaved rounds survive the
// load of a shared machine better than absolute figures.

// statusCostNamespace holds the objects the writecost scenario writes.
const statusCostNamespace = "bench-status-cost"

// statusVariant is one kind of write: prepare brings object i to its first state, write(i, rev)
// writes it at rev.
type statusVariant struct {
	name, note string
	prepare    func(ctx context.Context, c client.Client, i int) error
	write      func(ctx context.Context, c client.Client, i, rev int) error
}

// statusVariants are the writes compared, the ConfigMap apply first (the reference).
func statusVariants() []statusVariant {
	pkg := func(prefix string) func(context.Context, client.Client, int) error {
		return func(ctx context.Context, c client.Client, i int) error {
			return applyAll(ctx, c, []*unstructured.Unstructured{bookkeepingPackage(statusCostNamespace, variantName(prefix, i), 1)})
		}
	}
	status := func(prefix string, parts statusParts) func(context.Context, client.Client, int, int) error {
		return func(ctx context.Context, c client.Client, i, rev int) error {
			return patchStatusParts(ctx, c, variantName(prefix, i), rev, parts)
		}
	}
	return []statusVariant{
		{name: "ConfigMap apply", note: "the reference: a ConfigMap of the package, server-side applied",
			write: func(ctx context.Context, c client.Client, i, rev int) error {
				return applyAll(ctx, c, []*unstructured.Unstructured{costConfigMap(variantName("cm-", i), rev)})
			}},
		{name: "status patch, full", note: "4 conditions, 2 phases, 10 inventory entries (as convoy writes it)",
			prepare: pkg("full-"), write: status("full-", statusParts{conditions: true, phases: true, inventory: true})},
		{name: "status patch, no inventory", note: "4 conditions, 2 phases",
			prepare: pkg("noinv-"), write: status("noinv-", statusParts{conditions: true, phases: true})},
		{name: "status patch, conditions only", note: "4 conditions and the revision",
			prepare: pkg("cond-"), write: status("cond-", statusParts{conditions: true})},
		{name: "status patch, revision only", note: "the revision fields alone",
			prepare: pkg("rev-"), write: status("rev-", statusParts{})},
		{name: "ConfigMap merge patch, status-sized", note: "the full status's JSON as a ConfigMap value: a built-in kind, no CRD schema",
			write: func(ctx context.Context, c client.Client, i, rev int) error {
				return patchSizedConfigMap(ctx, c, i, rev)
			}},
	}
}

// variantName names object i of a variant.
func variantName(prefix string, i int) string { return fmt.Sprintf("%saddon-%d", prefix, i) }

// runStatusCost measures the variants: writes objects per variant per round, rounds rounds.
func runStatusCost(ctx context.Context, cfg Config, res *Results) error {
	logf(cfg, "writecost: %d rounds of %d writes per variant", cfg.WriteCostRounds, cfg.WriteCostWrites)
	e, err := newEnv(ctx, cfg, envInput{Clusters: 1})
	if err != nil {
		return err
	}
	defer func() { _ = e.close() }()
	if err := e.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: statusCostNamespace}}); err != nil {
		return err
	}
	copies, err := schemaVariants(ctx, e.admin)
	if err != nil {
		return fmt.Errorf("writecost: %w", err)
	}
	variants := append(statusVariants(), copies...)
	for _, v := range variants {
		if err := prepareVariant(ctx, e, v, cfg); err != nil {
			return fmt.Errorf("writecost: preparing %s: %w", v.name, err)
		}
	}
	cpu, err := measureVariants(ctx, e, variants, cfg)
	if err != nil {
		return err
	}
	writes := float64(cfg.WriteCostRounds * cfg.WriteCostWrites)
	reference := ms(cpu[0]) / writes
	for i, v := range variants {
		res.add(Row{Scenario: "status patch cost", Metric: "API server CPU per write: " + v.name, Value: ms(cpu[i]) / writes,
			Unit: "ms", Baseline: ptr(reference), BaselineName: "ConfigMap apply", Note: v.note})
	}
	return nil
}

// prepareVariant brings the objects of v to their first state (revision 1).
func prepareVariant(ctx context.Context, e *env, v statusVariant, cfg Config) error {
	return runConcurrently(ctx, cfg.WriteCostWrites, cfg.Concurrency, func(i int) error {
		if v.prepare != nil {
			if err := v.prepare(ctx, e.admin, i); err != nil {
				return err
			}
		}
		return v.write(ctx, e.admin, i, 1)
	})
}

// measureVariants runs the rounds, each variant once per round in an order that rotates, and
// returns each variant's API-server CPU summed over the rounds.
func measureVariants(ctx context.Context, e *env, variants []statusVariant, cfg Config) ([]time.Duration, error) {
	cpu := make([]time.Duration, len(variants))
	for round := range cfg.WriteCostRounds {
		rev := round + 2
		for k := range variants {
			i := (k + round) % len(variants)
			v := variants[i]
			spent, err := e.serverCPUOf(func() error {
				return runConcurrently(ctx, cfg.WriteCostWrites, cfg.Concurrency, func(j int) error { return v.write(ctx, e.admin, j, rev) })
			})
			if err != nil {
				return nil, fmt.Errorf("writecost: %s: %w", v.name, err)
			}
			cpu[i] += spent
		}
	}
	return cpu, nil
}

// statusParts says which parts of a settled Package's status a variant writes; the revision
// fields are always written.
type statusParts struct{ conditions, phases, inventory bool }

// patchStatusParts merge-patches the parts of a settled status at rev to Package name.
func patchStatusParts(ctx context.Context, c client.Client, name string, rev int, parts statusParts) error {
	raw, err := json.Marshal(map[string]any{"status": settledStatus(statusCostNamespace, rev, objectsPerPackage, parts)})
	if err != nil {
		return err
	}
	pkg := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: statusCostNamespace, Name: name}}
	return c.Status().Patch(ctx, pkg, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(bareOwner))
}

// costConfigMap is a ConfigMap of the management package at rev, in statusCostNamespace.
func costConfigMap(name string, rev int) *unstructured.Unstructured {
	return obj("v1", "ConfigMap", statusCostNamespace, name, "deploy", rev,
		map[string]any{"data": map[string]any{"revision": fmt.Sprint(rev), "settings": strings.Repeat("x", 200)}})
}

// patchSizedConfigMap merge-patches ConfigMap i with the full status's JSON as a value.
func patchSizedConfigMap(ctx context.Context, c client.Client, i, rev int) error {
	status, err := json.Marshal(settledStatus(statusCostNamespace, rev, objectsPerPackage, statusParts{true, true, true}))
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: statusCostNamespace, Name: variantName("sized-", i)}}
	if rev == 1 {
		return client.IgnoreAlreadyExists(c.Create(ctx, cm))
	}
	raw, err := json.Marshal(map[string]any{"data": map[string]string{"status": string(status)}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(bareOwner))
}
