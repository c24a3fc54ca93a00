package engine

import (
	"fmt"

	"github.com/convoy-gitops/convoy/manifests/probe"
	"github.com/convoy-gitops/convoy/sync/engine/memory"
)

// judgePhase judges the live state of a phase's objects, as the observer saw them during the
// pass; quiet objects keep the verdict they had. The message names the first unavailable
// objects.
func judgePhase(rules []probe.Rule, out *phaseOutcome) (bool, string) {
	var failures []string
	for _, obj := range out.objects {
		if out.observer.isQuiet(obj) {
			continue
		}
		live := out.observer.live(obj)
		if live == nil {
			failures = append(failures, describe(obj)+": not found")
			continue
		}
		if ok, msg := probe.Evaluate(rules, live); !ok {
			failures = append(failures, fmt.Sprintf("%s: %s", describe(obj), msg))
		}
	}
	if len(failures) == 0 {
		return true, ""
	}
	return false, nameList(failures)
}

// verdictsOf is what the memory is told of a phase found available: each object's verdict.
func verdictsOf(c *cluster, out *phaseOutcome) []memory.Verdict {
	verdicts := make([]memory.Verdict, len(out.objects))
	for i, obj := range out.objects {
		v := memory.Verdict{GVK: obj.GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if v.Quiet = out.observer.isQuiet(obj); !v.Quiet {
			live := out.observer.live(obj)
			v.Live, v.Owned = observedOf(live), live != nil && c.owns(live)
		}
		verdicts[i] = v
	}
	return verdicts
}
