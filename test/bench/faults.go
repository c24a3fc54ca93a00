package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/sources"
)

// FaultsConfig is one run of the fault harness (`make faults`).
type FaultsConfig struct {
	// Clusters is the number of HostedClusters; default 200.
	Clusters int `json:"clusters"`
	// Faults to inject, by name; default all (AllFaults).
	Faults []string `json:"faults"`
	// Concurrency is the controller's --concurrency; default 4.
	Concurrency int `json:"concurrency"`
	// GitDownFor is how long the git-down fault keeps the Git server stalled; default 2m.
	GitDownFor time.Duration `json:"gitDownFor"`
	// HostedClusters is the number of HostedClusters of the hosted faults, whose package has
	// phases inside the hosted cluster; default a fifth of Clusters, at least 10.
	HostedClusters int `json:"hostedClusters"`
	// ControllerArgs are more flags of every controller the run starts.
	ControllerArgs []string `json:"controllerArgs,omitempty"`
	// ConvoyBinary is bin/convoy.
	ConvoyBinary string `json:"-"`
	// KeepWorkDir keeps the controller logs and Git storage after the run.
	KeepWorkDir bool `json:"-"`
	// Log receives progress lines; nil is quiet.
	Log io.Writer `json:"-"`
	// SettleTimeout bounds the wait for each fault's rollout to settle, after which the row
	// fails and names a Package that did not; default 20 minutes.
	SettleTimeout time.Duration `json:"-"`
}

// Fault names, for FaultsConfig.Faults.
const (
	// FaultKill SIGKILLs the controller mid-rollout and starts it again.
	FaultKill = "controller-killed"
	// FaultKillTwice SIGKILLs the controller mid-rollout, then again soon after its restart.
	FaultKillTwice = "controller-killed-twice"
	// FaultFreshStore SIGKILLs the controller mid-rollout and starts it on an empty Git store,
	// as a new pod with an emptyDir would.
	FaultFreshStore = "controller-restarted-empty-store"
	// FaultGitDown stalls the Git server mid-rollout for FaultsConfig.GitDownFor.
	FaultGitDown = "git-down"
	// FaultForcePush force-pushes the followed branch back to the previous commit mid-rollout,
	// dropping the commit being rolled out.
	FaultForcePush = "force-push-back"
	// FaultAPIServerRestarted restarts the management kube-apiserver mid-rollout, etcd kept.
	FaultAPIServerRestarted = "apiserver-restarted"
	// FaultForcePushUnrelated force-pushes the followed branch to a new root commit mid-rollout,
	// an unrelated history with the next revision of the packages.
	FaultForcePushUnrelated = "force-push-unrelated"
	// FaultCredentialsRevoked puts the Git server behind basic auth, then changes its password
	// mid-rollout and restores it once the GitSource said AuthenticationFailed.
	FaultCredentialsRevoked = "git-credentials-revoked"
	// FaultStoreDeleted deletes the Git store under the running controller mid-rollout.
	FaultStoreDeleted = "store-deleted"
	// FaultHostedHealthy rolls out a new revision to the fleet and to the hosted clusters,
	// whose package has hosted-cluster phases, all healthy: the baseline of FaultHostedDead.
	FaultHostedHealthy = "hosted-healthy"
	// FaultHostedDead blackholes one hosted API server in ten and makes one in ten refuse
	// connections as a new revision rolls out; the healthy part must roll out within 1.3× the
	// time of FaultHostedHealthy, the dead must be reported and recover once they answer.
	FaultHostedDead = "hosted-dead"
	// FaultOldOwnerResumes takes an add-on over from a real Flux (a Kustomization per HCP
	// namespace, suspended with pruning off, as the guide says) and resumes Flux by mistake a
	// fifth of the way through: nothing may be deleted, re-created or have its pod template
	// changed, convoy must stop with TakeoverContested rather than write in a loop, and the
	// guide's way back must finish the takeover. It needs Flux's controllers (`make tools`).
	FaultOldOwnerResumes = "old-owner-resumes"
	// FaultLeaderKilled runs two replicas with leader election and SIGKILLs the leader
	// mid-rollout; the standby, with its own empty store, takes over. It leaves the two-replica
	// setup in place, so it runs after the others but FaultCRDDeleted.
	FaultLeaderKilled = "leader-killed"
	// FaultCRDDeleted deletes a CRD of the package out of band mid-rollout, then the
	// HostedClusterPackage and its Packages, whose teardown must finish. It ends the fleet, so
	// it runs last.
	FaultCRDDeleted = "crd-deleted"
)

// AllFaults lists every fault in the order they run.
var AllFaults = []string{FaultKill, FaultKillTwice, FaultFreshStore, FaultAPIServerRestarted, FaultGitDown,
	FaultForcePush, FaultForcePushUnrelated, FaultCredentialsRevoked, FaultStoreDeleted, FaultHostedHealthy, FaultHostedDead,
	FaultOldOwnerResumes, FaultLeaderKilled, FaultCRDDeleted}

// ShortFaults is the subset TestFaultsShort runs with the tests: AllFaults without the ones
// another covers at a small size (controller-killed by controller-killed-twice,
// force-push-unrelated by force-push-back, old-owner-resumes by test/takeover), so that it stays
// under 3 minutes on 2 cores.
var ShortFaults = []string{FaultKillTwice, FaultFreshStore, FaultAPIServerRestarted, FaultGitDown, FaultForcePush,
	FaultCredentialsRevoked, FaultStoreDeleted, FaultHostedHealthy, FaultHostedDead, FaultLeaderKilled, FaultCRDDeleted}

// QuickFaults is the subset TestFaultsQuick runs with `make test`: a controller killed twice,
// Git down and the Git store deleted mid-rollout, the faults that most often touch new code.
var QuickFaults = []string{FaultKillTwice, FaultGitDown, FaultStoreDeleted}

// RunFaults starts one fleet (management server, HostedClusters, Git, the controller as a
// process), installs the package with a rollingUpgrade of 10%, then for each fault rolls out
// a new revision while injecting it, sampling the fleet continuously.
func RunFaults(ctx context.Context, cfg FaultsConfig) (*FaultResults, error) {
	cfg.Clusters = cmp(cfg.Clusters, 200)
	cfg.Concurrency = cmp(cfg.Concurrency, 4)
	if cfg.GitDownFor <= 0 {
		cfg.GitDownFor = 2 * time.Minute
	}
	if len(cfg.Faults) == 0 {
		cfg.Faults = AllFaults
	}
	if cfg.HostedClusters <= 0 {
		cfg.HostedClusters = max(10, cfg.Clusters/5)
	}
	res := &FaultResults{Started: time.Now(), CPUs: runtime.NumCPU(), Config: cfg}
	defer func() { res.Duration = time.Since(res.Started).Round(time.Second).String() }()
	work, err := os.MkdirTemp("", "convoy-faults-")
	if err != nil {
		return res, err
	}
	if !cfg.KeepWorkDir {
		defer os.RemoveAll(work)
	}
	bcfg := Config{ConvoyBinary: cfg.ConvoyBinary, WorkDir: work, KeepWorkDir: cfg.KeepWorkDir, Log: cfg.Log,
		Concurrency: cfg.Concurrency}
	logf(bcfg, "faults: starting the management server and %d HostedClusters", cfg.Clusters)
	e, err := newEnv(ctx, bcfg, envInput{Clusters: cfg.Clusters})
	if err != nil {
		return res, err
	}
	defer func() { _ = e.close() }()
	// The test Git server speaks plain HTTP on loopback; the credentials fault sends it
	// credentials, which the controller refuses over http:// without this flag.
	e.ctrlArgs = append([]string{sources.AllowInsecureHTTPFlag}, cfg.ControllerArgs...)
	e.settleTimeout = cfg.SettleTimeout
	if err := installForFaults(ctx, e); err != nil {
		return res, err
	}
	hosted := &hostedFaults{cfg: cfg}
	defer hosted.close()
	for _, name := range cfg.Faults {
		if name == FaultCRDDeleted {
			logf(bcfg, "faults: %s", name)
			res.Rows = append(res.Rows, runCRDDeleted(ctx, e))
			continue
		}
		if name == FaultOldOwnerResumes {
			logf(bcfg, "faults: %s", name)
			res.Rows = append(res.Rows, runOldOwnerResumes(ctx, e))
			continue
		}
		if name == FaultHostedHealthy || name == FaultHostedDead {
			logf(bcfg, "faults: %s", name)
			res.Rows = append(res.Rows, hosted.run(ctx, e, name))
			continue
		}
		inject, ok := faultInjectors(cfg)[name]
		if !ok {
			return res, fmt.Errorf("unknown fault %q (known: %v)", name, AllFaults)
		}
		logf(bcfg, "faults: %s", name)
		row := runFault(ctx, e, name, inject)
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// installForFaults starts the controller, creates the HostedClusterPackage with a
// rollingUpgrade of 10% and waits until every Package progressed at the first revision.
func installForFaults(ctx context.Context, e *env) error {
	if err := e.startController(ctx); err != nil {
		return err
	}
	if err := e.createHostedClusterPackage(ctx); err != nil {
		return err
	}
	if err := e.setHostedClusterPackageStrategy(ctx, true); err != nil {
		return err
	}
	_, err := e.watch.waitAll(ctx, e.namespaces, progressedAt(e.commit), rolloutTimeout)
	return err
}

// injector injects a fault into the rollout of tgt's commit, which has just started; it
// records the controller restarts and a note in row, and returns when the controller was back.
// A fault that changes what the fleet must end on (a force-push) sets tgt.
type injector func(ctx context.Context, e *env, tgt *target, row *FaultResult) (back time.Time, err error)

// target is the commit every Package must end on.
type target struct {
	mu     sync.Mutex
	commit string
}

// get returns the commit.
func (t *target) get() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.commit
}

// set changes the commit.
func (t *target) set(commit string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.commit = commit
}

// faultInjectors maps fault names to their injectors.
func faultInjectors(cfg FaultsConfig) map[string]injector {
	return map[string]injector{
		FaultKill:         killing(1),
		FaultKillTwice:    killing(2),
		FaultFreshStore:   restartWithEmptyStore,
		FaultGitDown:      gitDown(cfg.GitDownFor),
		FaultForcePush:    forcePushBack,
		FaultLeaderKilled: killLeader,

		FaultAPIServerRestarted: apiServerRestarted,
		FaultForcePushUnrelated: forcePushUnrelated,
		FaultCredentialsRevoked: credentialsRevoked,
		FaultStoreDeleted:       storeDeleted,
	}
}

// restartWithEmptyStore kills the controller mid-rollout, deletes its Git store and starts it
// again.
func restartWithEmptyStore(ctx context.Context, e *env, tgt *target, row *FaultResult) (time.Time, error) {
	if err := waitUpdated(ctx, e, tgt.get(), 2); err != nil {
		return time.Time{}, err
	}
	if err := e.ctrl.Kill(); err != nil {
		return time.Time{}, err
	}
	if err := os.RemoveAll(filepath.Join(e.dir, "sources")); err != nil {
		return time.Time{}, err
	}
	if err := e.restartController(ctx); err != nil {
		return time.Time{}, err
	}
	row.Restarts = 1
	return time.Now(), nil
}

// killing returns an injector that kills the controller times times in a row.
func killing(times int) injector {
	return func(ctx context.Context, e *env, tgt *target, row *FaultResult) (time.Time, error) {
		restarts, back, err := killMidRollout(ctx, e, tgt.get(), times)
		row.Restarts = restarts
		return back, err
	}
}

// commitAndPoll commits the next revision of the package and asks the GitSource to poll it.
func commitAndPoll(ctx context.Context, e *env) (string, error) {
	commit, err := e.commitNext()
	if err != nil {
		return "", err
	}
	return commit, e.requestPoll(ctx)
}

// runFault commits a new revision, injects the fault while a sampler watches the fleet,
// waits for the rollout to finish and checks the invariants.
func runFault(ctx context.Context, e *env, name string, inject injector) FaultResult {
	n := len(e.namespaces)
	row := FaultResult{Fault: name, Clusters: n, Budget: max(1, n/10)}
	gitBefore := e.git.Stats()
	commit, err := commitAndPoll(ctx, e)
	if err != nil {
		row.Error = err.Error()
		return row
	}
	start := time.Now()
	tgt := &target{commit: commit}
	s := startSampler(ctx, e, e.namespaces, tgt)
	restartedAt, err := inject(ctx, e, tgt, &row)
	commit = tgt.get()
	if err == nil {
		var left string
		if left, err = waitSettled(ctx, e, commit); left != "" {
			row.Note = strings.TrimPrefix(row.Note+"; "+left, "; ")
		}
	}
	var end time.Time
	row.MaxUnavailable, row.Samples, end = s.stop()
	if !end.IsZero() {
		// Note: a rollout that finished before the controller or Git was back recovered at once.
		row.Rollout, row.Recovery = end.Sub(start), max(0, end.Sub(restartedAt))
	}
	row.GitFetches = e.git.Stats().Sub(gitBefore).UploadPacks
	if err == nil && e.ctrl.Exited() {
		err = fmt.Errorf("the controller exited; see %s", e.ctrl.LogPath())
	}
	if err != nil {
		row.Error = err.Error()
	}
	row.WrongRevision = n - countProgressed(e, commit)
	if row.WrongRevision > 0 {
		row.Note += describeWrong(e, commit)
	}
	row.ObjectsLost, err = countLost(ctx, e)
	if err != nil && row.Error == "" {
		row.Error = err.Error()
	}
	row.Passed = row.Error == "" && row.MaxUnavailable <= row.Budget && row.ObjectsLost == 0 && row.WrongRevision == 0
	return row
}

// settleTime is how long every Package must stay progressed for the rollout to count as
// ended: right after a force-push, a controller may still act on its stale view for a moment.
const settleTime = 2 * time.Second

// waitSettled waits until every Package progressed at commit and still is settleTime later.
// When some left in between, it describes the first one, so that the row says what happened.
func waitSettled(ctx context.Context, e *env, commit string) (string, error) {
	timeout := e.settleTimeout
	if timeout <= 0 {
		timeout = rolloutTimeout
	}
	deadline := time.Now().Add(timeout)
	left := ""
	for time.Now().Before(deadline) {
		if _, err := e.watch.waitAll(ctx, e.namespaces, progressedAt(commit), time.Until(deadline)); err != nil {
			return left, fmt.Errorf("%w%s", err, describeLeft(e, commit))
		}
		select {
		case <-ctx.Done():
			return left, ctx.Err()
		case <-time.After(settleTime):
		}
		n := countProgressed(e, commit)
		if n == len(e.namespaces) {
			return left, nil
		}
		if left == "" {
			left = fmt.Sprintf("%d Packages left %.8s after all had reached it%s", len(e.namespaces)-n, commit, describeLeft(e, commit))
		}
	}
	return left, fmt.Errorf("the Packages did not settle at %.8s within %s", commit, timeout)
}

// describeLeft says why the first Package not progressed at commit is not: its revisions and
// its Available and Progressing conditions.
func describeLeft(e *env, commit string) string {
	e.watch.mu.Lock()
	defer e.watch.mu.Unlock()
	for key, p := range e.watch.pkgs {
		if !e.namespaces[key.Namespace] || progressedAt(commit)(p) {
			continue
		}
		cond := func(t string) string {
			c := apimeta.FindStatusCondition(p.Status.Conditions, t)
			if c == nil {
				return t + " unset"
			}
			return fmt.Sprintf("%s=%s %s (generation %d of %d): %.120s", t, c.Status, c.Reason, c.ObservedGeneration, p.Generation, c.Message)
		}
		return fmt.Sprintf(" (e.g. %s: spec.revision %.8s, status.revision %.8s; %s; %s)", key, p.Spec.Revision, p.Status.Revision,
			cond(convoyv1alpha1.AvailableCondition), cond(convoyv1alpha1.ProgressingCondition))
	}
	return ""
}

// killMidRollout waits until the rollout of commit has updated a few Packages, then kills the
// controller and starts it again, times times in a row (the next kill comes as soon as the
// restarted controller updated one more Package).
func killMidRollout(ctx context.Context, e *env, commit string, times int) (int, time.Time, error) {
	var restartedAt time.Time
	target := 2
	for i := range times {
		if err := waitUpdated(ctx, e, commit, target); err != nil {
			return i, restartedAt, err
		}
		target = updatedTo(e, commit) + 1
		if err := e.ctrl.Kill(); err != nil {
			return i, restartedAt, err
		}
		if err := e.restartController(ctx); err != nil {
			return i, restartedAt, err
		}
		restartedAt = time.Now()
	}
	return times, restartedAt, nil
}

// updatedTo returns the number of Packages whose spec.revision is commit.
func updatedTo(e *env, commit string) int {
	ok, _ := e.watch.count(e.namespaces, func(p *convoyv1alpha1.Package) bool { return p.Spec.Revision == commit })
	return ok
}

// waitUpdated waits until at least n Packages have spec.revision commit.
func waitUpdated(ctx context.Context, e *env, commit string, n int) error {
	deadline := time.Now().Add(rolloutTimeout)
	for time.Now().Before(deadline) {
		if updatedTo(e, commit) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("fewer than %d Packages updated to %s after %s", n, commit, rolloutTimeout)
}
