package engine

import (
	"fmt"

	"github.com/convoy-gitops/convoy/manifests/probe"
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
