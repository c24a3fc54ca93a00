package engine

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/manifests/probe"
	"github.com/convoy-gitops/convoy/sync/engine/memory"
)

// A phase is applied stage by stage (stage.go), its CustomResourceDefinitions established
// between the two stages, then judged (judge.go); the verdicts of an available phase go to the
// memory when the pass settles (Result.judged).

// establishPoll is how often a pass re-reads CRDs it waits for.
const establishPoll = 250 * time.Millisecond

// phaseOutcome is what applying one phase did.
type phaseOutcome struct {
	// objects are the prepared objects, in phase order (definitions first).
	objects []*unstructured.Unstructured
	// observer holds their live state.
	observer *observer
	changes  Changes
	// at is the phase's cluster as the memory sees it, with the rules the phase is judged under.
	at memory.Cluster
	// answered and forgotten are the objects a direct apply wrote, and those a direct apply
	// refused or the pass deleted again, which the memory is told of (tell).
	answered, forgotten map[objectKey]bool
	// unwatched is set when an object is one no watch tells about: a hosted-cluster object, or
	// a kind whose watch has not synced yet.
	unwatched bool
	// appliedDirectly is set when an object of the management cluster was applied without a
	// read: the watch events of such an object are dropped while its apply is in flight.
	appliedDirectly bool
}

// syncPhase applies phase i and judges it; it records both in res.
func (e *Engine) syncPhase(ctx context.Context, t *Target, rev *Revision, i int, res *Result) (bool, error) {
	ph := &rev.Phases[i]
	c := t.cluster(ph.Class)
	c.previous = res.previous
	out, err := e.applyPhase(ctx, c, ph, rev.Probes, res.rules)
	res.record(c, ph, out)
	if err != nil {
		res.Phases[i].Message = err.Error()
		markWaiting(res.Phases[i+1:], ph.Name)
		return false, err
	}
	available, msg := judgePhase(rev.Probes, out)
	res.Phases[i].Available, res.Phases[i].Message = available, msg
	if available {
		res.judged = append(res.judged, memory.JudgedPhase{Cluster: out.at, Verdicts: verdictsOf(c, out)})
	} else {
		probeFailures.WithLabelValues(e.opts.Controller, c.name).Inc()
		markWaiting(res.Phases[i+1:], ph.Name)
	}
	return available, nil
}

// markWaiting marks the phases after an unavailable one.
func markWaiting(phases []convoyv1alpha1.PhaseStatus, blocking string) {
	for i := range phases {
		phases[i].Message = fmt.Sprintf("waiting for phase %q", blocking)
	}
}

// applyPhase applies the objects of ph to c: CustomResourceDefinitions and Namespaces first,
// then, once the CRDs are established, the rest.
func (e *Engine) applyPhase(ctx context.Context, c *cluster, ph *Phase, probes []probe.Rule, rules [sha256.Size]byte) (*phaseOutcome, error) {
	out := &phaseOutcome{observer: newObserver(c.client, probes), at: c.memoryCluster(rules),
		answered: map[objectKey]bool{}, forgotten: map[objectKey]bool{}}
	defs, rest := splitStages(ph)
	if len(defs) > 0 {
		if err := e.applyStage(ctx, c, ph, defs, out); err != nil {
			return out, err
		}
		if err := e.waitEstablished(ctx, c, objectsOf(defs), out.observer); err != nil {
			return out, err
		}
	}
	return out, e.applyStage(ctx, c, ph, rest, out)
}

// splitStages splits the objects of a phase into the definitions applied first
// (CustomResourceDefinitions and Namespaces) and the rest, keeping their order. Each state
// holds its source, read-only, and the source's digest.
func splitStages(ph *Phase) (defs, rest []desiredState) {
	rest = make([]desiredState, 0, len(ph.Objects))
	for i, o := range ph.Objects {
		s := desiredState{source: o}
		s.sourceDigest, s.ok = ph.sourceDigest(i)
		if isDefinition(o) {
			defs = append(defs, s)
		} else {
			rest = append(rest, s)
		}
	}
	return defs, rest
}

// isDefinition reports a CustomResourceDefinition or a Namespace.
func isDefinition(o *unstructured.Unstructured) bool {
	return isDefinitionKind(o.GroupVersionKind().GroupKind())
}

// isDefinitionKind reports the kinds whose deletion deletes other objects: a
// CustomResourceDefinition (every custom resource of its kind) or a Namespace (everything in
// it).
func isDefinitionKind(gk schema.GroupKind) bool {
	return (gk.Group == "apiextensions.k8s.io" && gk.Kind == "CustomResourceDefinition") ||
		(gk.Group == "" && gk.Kind == "Namespace")
}

// sourceDigest returns the digest of object i of the phase.
func (ph *Phase) sourceDigest(i int) (manifests.Digest, bool) {
	if len(ph.Digests) == len(ph.Objects) {
		return ph.Digests[i], true
	}
	return manifests.ObjectDigest(ph.Objects[i])
}

// waitEstablished waits, for at most EstablishTimeout, until the CRDs among defs are
// established; past that it returns a Waiting error.
func (e *Engine) waitEstablished(ctx context.Context, c *cluster, defs []*unstructured.Unstructured, obs *observer) error {
	for _, d := range defs {
		if d.GetKind() != "CustomResourceDefinition" || obs.isQuiet(d) || established(obs.live(d)) {
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, establishPoll, e.opts.EstablishTimeout, true,
			func(ctx context.Context) (bool, error) {
				live := &unstructured.Unstructured{}
				live.SetGroupVersionKind(d.GroupVersionKind())
				if err := c.client.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
					return false, err
				}
				obs.observe(live)
				return established(live), nil
			})
		switch {
		case wait.Interrupted(err):
			return pass.Waitf(convoyv1alpha1.DependencyNotReadyReason, e.opts.ProbeInterval,
				"CustomResourceDefinition %s is not established yet", d.GetName())
		case err != nil:
			return c.classify(err)
		}
	}
	return nil
}

// established reports a CRD with Established=True.
func established(crd *unstructured.Unstructured) bool {
	if crd == nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, raw := range conds {
		if c, ok := raw.(map[string]any); ok && c["type"] == "Established" && c["status"] == "True" {
			return true
		}
	}
	return false
}
