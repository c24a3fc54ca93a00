package rolloutcontroller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/rollout/checks"
)

// DefaultCheckConcurrency bounds the checks of one HostedClusterPackage evaluated in parallel.
const DefaultCheckConcurrency = 4

// compiledChecks are the compiled checks of one generation of a HostedClusterPackage, by
// checkKey: the same check in spec.checks and in a partition policy is compiled once.
type compiledChecks struct {
	uid        types.UID
	generation int64
	byKey      map[string]*checks.Check
}

// reconcileChecks records the evaluations of the due checks that finished in s.in, so that the
// plan step plans with them, and starts the due checks not under way (startChecks): it compiles
// the spec's checks (once per generation; an error stalls with InvalidSpec before any I/O) and
// asks rollout.DueChecks which are due. An evaluation whose template does not render stalls
// with InvalidSpec, naming the check and its partition. A HostedClusterPackage without checks
// asks nothing: DueChecks plans the whole fleet to find the partitions whose checks run, which
// took as much of a rollout's CPU as the plan itself.
func (r *HostedClusterPackageReconciler) reconcileChecks(ctx context.Context, s *scope) error {
	compiled, err := r.compiledChecksOf(s.obj)
	if err != nil {
		return err
	}
	if !hasChecks(s.obj) {
		r.runs.sweep(s.obj.Name, nil) // checks removed from the spec: drop their runs
		return nil
	}
	due, err := rollout.DueChecks(s.in)
	if err != nil {
		return nil // Compute refuses the same spec, and says why
	}
	keys := make(map[checkRunKey]bool, len(due))
	var idle []rollout.DueCheck
	for i := range due {
		key := checkRunKeyOf(s.obj, &due[i])
		keys[key] = true
		run, ok := r.runs.take(key)
		switch {
		case !ok:
			idle = append(idle, due[i])
		case run.done && run.err != nil:
			return pass.Stallf(convoyv1alpha1.InvalidSpecReason, "check %s of partition %s: %w",
				due[i].Check.Name, due[i].Partition, run.err)
		case run.done:
			s.in.SetCheckResult(due[i].Partition, due[i].Record(run.eval))
			checkEvaluations.WithLabelValues(s.obj.Name, due[i].Check.Name, outcomeValue(run.eval.Outcome)).Inc()
		}
	}
	r.runs.sweep(s.obj.Name, keys)
	r.startChecks(ctx, s, compiled, idle)
	return nil
}

// hasChecks reports whether any partition of obj may run checks: spec.checks or a partition
// policy's own.
func hasChecks(obj *convoyv1alpha1.HostedClusterPackage) bool {
	if len(obj.Spec.Checks) > 0 {
		return true
	}
	if obj.Spec.Partition == nil {
		return false
	}
	for i := range obj.Spec.Partition.Policies {
		if len(obj.Spec.Partition.Policies[i].Checks) > 0 {
			return true
		}
	}
	return false
}

// compiledChecksOf returns the compiled checks of obj's generation, compiling them when the
// generation is new. A check that does not compile stalls with InvalidSpec, naming its field
// in the spec, the check, the field of the check and the rule it breaks.
func (r *HostedClusterPackageReconciler) compiledChecksOf(obj *convoyv1alpha1.HostedClusterPackage) (*compiledChecks, error) {
	if v, ok := r.compiled.Load(obj.Name); ok {
		if c := v.(*compiledChecks); c.uid == obj.UID && c.generation == obj.Generation {
			return c, nil
		}
	}
	c := &compiledChecks{uid: obj.UID, generation: obj.Generation, byKey: map[string]*checks.Check{}}
	names, err := c.compile("spec.checks", obj.Spec.Checks, r.Checks.AllowInsecureHTTP)
	if err != nil {
		return nil, err
	}
	if obj.Spec.Partition != nil {
		for i, pol := range obj.Spec.Partition.Policies {
			more, err := c.compile(fmt.Sprintf("spec.partition.policies[%d].checks", i), pol.Checks, r.Checks.AllowInsecureHTTP)
			if err != nil {
				return nil, err
			}
			names = append(names, more...)
		}
	}
	zeroCheckEvaluations(obj.Name, names)
	r.compiled.Store(obj.Name, c)
	return c, nil
}

// compile compiles the checks of the list at path and returns their names. A check that
// would send its Secret's credentials over http:// without allowInsecureHTTP is refused like
// one that does not compile, naming the Secret: before the Secret is read or anything sent.
func (c *compiledChecks) compile(path string, list []convoyv1alpha1.RolloutCheck, allowInsecureHTTP bool) ([]string, error) {
	names := make([]string, 0, len(list))
	for i := range list {
		names = append(names, list[i].Name)
		key := checks.Key(&list[i])
		if c.byKey[key] != nil {
			continue
		}
		compiled, err := checks.CompileRolloutCheck(&list[i])
		if err != nil {
			return nil, pass.Stallf(convoyv1alpha1.InvalidSpecReason, "%s[%d] (check %s): %w", path, i, list[i].Name, err)
		}
		if err := checks.InsecureCredentials(&list[i], allowInsecureHTTP); err != nil {
			ref := checks.SecretRef(&list[i])
			return nil, pass.Stallf(convoyv1alpha1.InvalidSpecReason, "%s[%d] (check %s, credentials of Secret %s/%s): %w",
				path, i, list[i].Name, ref.Namespace, ref.Name, err)
		}
		c.byKey[key] = compiled
	}
	return names, nil
}

// startChecks starts the evaluations of the due checks, as many as the HostedClusterPackage's
// bound (CheckConcurrency) leaves room for beside those under way; the others start in a later
// pass. Each runs within its timeout, and is stamped with the time of this pass.
func (r *HostedClusterPackageReconciler) startChecks(ctx context.Context, s *scope, compiled *compiledChecks,
	due []rollout.DueCheck) {
	room := r.checkConcurrency() - r.runs.underWay(s.obj.Name)
	if room <= 0 || len(due) == 0 {
		return
	}
	due = due[:min(room, len(due))]
	creds := r.readCheckSecrets(ctx, s.obj, due)
	ctx, now := context.WithoutCancel(ctx), s.now // the evaluation outlives the pass; its timeout bounds it
	for i := range due {
		d := &due[i]
		r.runs.start(checkRunKeyOf(s.obj, d), func() (rollout.Evaluation, error) {
			eval, err := r.evaluateCheck(ctx, compiled, d, creds)
			eval.At = now
			return eval, err
		})
	}
}

// evaluateCheck evaluates d once, under the controller's CheckOptions: inconclusive without I/O
// when its Secret gave no credentials or was refused. The error is a template of d that does not render.
func (r *HostedClusterPackageReconciler) evaluateCheck(ctx context.Context, compiled *compiledChecks, d *rollout.DueCheck,
	creds map[types.NamespacedName]checkCredentials) (rollout.Evaluation, error) {
	in := checks.Input{Data: checkData(d), Since: d.Since, AllowInsecureHTTP: r.Checks.AllowInsecureHTTP, Network: r.Checks.Network}
	if ref := checks.SecretRef(&d.Check); ref != nil {
		c := creds[types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}]
		if c.problem != "" {
			return rollout.Evaluation{Outcome: rollout.CheckError, Message: c.problem}, nil
		}
		in.Credentials = c.creds
	}
	check := compiled.byKey[checks.Key(&d.Check)]
	if check == nil { // the spec changed between compiling and planning: never a pass
		return rollout.Evaluation{Outcome: rollout.CheckError, Message: "the check is not compiled yet"}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, check.Timeout())
	defer cancel()
	ev, err := check.Evaluate(ctx, in)
	if err != nil {
		return rollout.Evaluation{}, err
	}
	return rollout.Evaluation{Outcome: plannerOutcome(ev.Outcome), Value: ev.Value, Message: ev.Message}, nil
}

// checkData is what the templates of d see.
func checkData(d *rollout.DueCheck) checks.Data {
	data := checks.Data{HostedClusterPackage: d.HostedClusterPackage, Partition: d.Partition,
		Revision: d.Revision, Commit: d.Commit}
	for _, t := range d.HostedClusters {
		data.HostedClusters = append(data.HostedClusters, checks.HostedCluster{Name: t.Name, Namespace: t.Namespace,
			HCPNamespace: t.HCPNamespace, Labels: t.Labels})
	}
	return data
}

// plannerOutcome maps an evaluation's outcome to the planner's; anything but a success or a
// failure is inconclusive.
func plannerOutcome(o checks.Outcome) rollout.CheckOutcome {
	switch o {
	case checks.Success:
		return rollout.CheckPass
	case checks.Failure:
		return rollout.CheckFail
	}
	return rollout.CheckError
}

// secretReader returns the reader of the checks' Secrets.
func (r *HostedClusterPackageReconciler) secretReader() client.Reader {
	if r.Secrets != nil {
		return r.Secrets
	}
	return r.Client
}

// checkConcurrency returns the bound of the checks of one HostedClusterPackage evaluated in
// parallel.
func (r *HostedClusterPackageReconciler) checkConcurrency() int {
	if r.CheckConcurrency > 0 {
		return r.CheckConcurrency
	}
	return DefaultCheckConcurrency
}
