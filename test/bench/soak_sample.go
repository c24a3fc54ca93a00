package bench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// SoakSample is what the soak measures every SampleEvery.
type SoakSample struct {
	// At is the time since the schedule started, in seconds.
	At float64 `json:"at"`
	// RSS is the controller's resident set (VmRSS), Heap its Go heap in use, in bytes.
	RSS  int64 `json:"rss"`
	Heap int64 `json:"heap"`
	// Goroutines and FDs are the controller's goroutines and open file descriptors.
	Goroutines int `json:"goroutines"`
	FDs        int `json:"fds"`
	// RenderRunning, RenderZombies and RenderOrphans count the render processes of the run's
	// controllers: alive, exited but not waited for, and alive with their controller gone.
	RenderRunning int `json:"renderRunning"`
	RenderZombies int `json:"renderZombies"`
	RenderOrphans int `json:"renderOrphans"`
	// QueueDepth is the sum of the controller's work queue depths; RenderCache and Ledger the
	// entries of its render cache and of the sync engines' ledgers.
	QueueDepth  float64 `json:"queueDepth"`
	RenderCache float64 `json:"renderCache"`
	Ledger      float64 `json:"ledger"`
	// LedgerApplying counts the ledgers' objects with an apply in flight.
	LedgerApplying float64 `json:"ledgerApplying"`
	// GitStore is the size of the controller's Git store, in bytes.
	GitStore int64 `json:"gitStore"`
	// Objects counts the API server's objects by kind: convoy's four, ControllerRevisions and
	// Events; MaxRevisions is the most ControllerRevisions one HostedClusterPackage has.
	Objects      map[string]int `json:"objects"`
	MaxRevisions int            `json:"maxRevisions"`
	// Revisions counts the ControllerRevisions of each HostedClusterPackage.
	Revisions map[string]int `json:"revisions"`
	// Violations are the invariants this sample found broken.
	Violations []string `json:"violations,omitempty"`
	// Error is why part of the sample could not be taken (the controller was being replaced).
	Error string `json:"error,omitempty"`
}

// soakMetrics are the controller's metric lines the sample sums, by prefix.
var soakMetrics = []string{"go_goroutines ", "go_memstats_heap_inuse_bytes ", "workqueue_depth{",
	"convoy_render_cache_entries ", "convoy_sync_ledger_entries{", "convoy_sync_ledger_applying{"}

// startSampling samples every SampleEvery until the returned function is called.
func (s *soakRun) startSampling(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.cfg.SampleEvery)
		defer t.Stop()
		for {
			s.takeSample(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// takeSample measures, judges the sample and appends it to the results.
func (s *soakRun) takeSample(ctx context.Context) {
	smp := SoakSample{At: time.Since(s.start).Seconds()}
	var errs []string
	note := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	note(s.sampleProcess(ctx, &smp))
	note(s.sampleObjects(ctx, &smp))
	smp.GitStore = dirSize(s.storeDir())
	smp.Error = strings.Join(errs, "; ")
	if ctx.Err() != nil {
		return // the run ended while the sample was taken: it measured nothing
	}
	s.mu.Lock()
	var last *SoakSample
	if n := len(s.res.Samples); n > 0 {
		last = &s.res.Samples[n-1]
	}
	smp.Violations = s.judgeSample(&smp, last)
	s.res.Samples = append(s.res.Samples, smp)
	s.mu.Unlock()
	for _, v := range smp.Violations {
		s.logf("soak: VIOLATION at %.0f s (seed %d): %s", smp.At, s.cfg.Seed, v)
	}
}

// sampleProcess reads the controller's memory, descriptors and metrics, and counts the
// render processes.
func (s *soakRun) sampleProcess(ctx context.Context, smp *SoakSample) error {
	ctrl := s.controller()
	u, err := ctrl.Usage()
	if err != nil {
		return err
	}
	smp.RSS = u.RSS
	if fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", ctrl.PID())); err == nil {
		smp.FDs = len(fds)
	}
	smp.RenderRunning, smp.RenderZombies, smp.RenderOrphans = s.renderProcesses()
	sums, err := ctrl.CounterSums(ctx, soakMetrics...)
	if err != nil {
		return err
	}
	smp.Goroutines, smp.Heap, smp.QueueDepth = int(sums[0]), int64(sums[1]), sums[2]
	smp.RenderCache, smp.Ledger, smp.LedgerApplying = sums[3], sums[4], sums[5]
	return nil
}

// renderProcesses counts the run's render processes: a process of the run's binary whose
// parent is not this process is a render process; it is an orphan when its parent is not of
// the run's binary either (its controller died), a zombie when it exited and its parent, a
// controller, has not waited for it.
func (s *soakRun) renderProcesses() (running, zombies, orphans int) {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	ours := func(pid int) bool {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		return err == nil && strings.TrimSuffix(exe, " (deleted)") == s.exe
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		state, ppid, ok := procState(pid)
		if !ok || ppid == self {
			continue
		}
		switch {
		case state == 'Z' && ours(ppid):
			zombies++
		case state != 'Z' && ours(pid) && ours(ppid):
			running++
		case state != 'Z' && ours(pid):
			orphans++
		}
	}
	return running, zombies, orphans
}

// procState returns the state and parent of pid, from /proc/<pid>/stat.
func procState(pid int) (byte, int, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	if len(fields) < 2 {
		return 0, 0, false
	}
	ppid, _ := strconv.Atoi(fields[1])
	return fields[0][0], ppid, true
}

// soakKinds are the kinds the sample counts.
var soakObjectKinds = []schema.GroupVersionKind{
	convoyv1alpha1.GroupVersion.WithKind("GitSource"), convoyv1alpha1.GroupVersion.WithKind("Package"),
	convoyv1alpha1.GroupVersion.WithKind("ObjectDeployment"), convoyv1alpha1.GroupVersion.WithKind("HostedClusterPackage"),
	{Group: "events.k8s.io", Version: "v1", Kind: "Event"},
}

// sampleObjects counts convoy's objects, the Events and the ControllerRevisions (the most one
// HostedClusterPackage has, too).
func (s *soakRun) sampleObjects(ctx context.Context, smp *SoakSample) error {
	smp.Objects = map[string]int{}
	for _, gvk := range soakObjectKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := s.e.admin.List(ctx, list); err != nil {
			return fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		smp.Objects[gvk.Kind] = len(list.Items)
	}
	revs := &appsv1.ControllerRevisionList{}
	if err := s.e.admin.List(ctx, revs); err != nil {
		return fmt.Errorf("listing ControllerRevisions: %w", err)
	}
	smp.Objects["ControllerRevision"] = len(revs.Items)
	smp.Revisions = map[string]int{}
	for _, cr := range revs.Items {
		owner := cr.Labels[convoyv1alpha1.HostedClusterPackageLabel]
		smp.Revisions[owner]++
		smp.MaxRevisions = max(smp.MaxRevisions, smp.Revisions[owner])
	}
	return nil
}

// storeDir is the Git store of the controller of the run.
func (s *soakRun) storeDir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store == "" {
		return filepath.Join(s.e.dir, "sources")
	}
	return s.store
}

// setStore records that the controller's Git store is now dir.
func (s *soakRun) setStore(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.store = dir
}

// dirSize returns the total size of the files under dir; zero when it cannot be read.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, ierr := d.Info(); ierr == nil && !d.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}
