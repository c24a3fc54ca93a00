package pass

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// newFixture returns a fake client holding one GitSource, counting status patches.
func newFixture(t *testing.T) (client.Client, *int) {
	t.Helper()
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(convoyv1alpha1.AddToScheme(scheme)).To(Succeed())
	gs := &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gs", Generation: 2,
		Annotations: map[string]string{convoyv1alpha1.RequestedAtAnnotation: "now"}}}
	patches := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(gs).WithStatusSubresource(gs).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			patches++
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}}).Build()
	return c, &patches
}

// pass runs one finalizer pass over the stored GitSource.
func pass(t *testing.T, c client.Client, rec events.EventRecorder, s Summary, mutate func(*convoyv1alpha1.GitSource)) *convoyv1alpha1.GitSource {
	t.Helper()
	g := NewWithT(t)
	gs := &convoyv1alpha1.GitSource{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "gs"}, gs)).To(Succeed())
	fin := NewStatusFinalizer(c, gs, StatusFields{ObservedGeneration: &gs.Status.ObservedGeneration,
		LastHandledReconcileAt: &gs.Status.LastHandledReconcileAt},
		StatusOptions{NegativeConditions: []string{convoyv1alpha1.FetchFailedCondition}, Notifier: NewNotifier(rec)})
	if mutate != nil {
		mutate(gs)
	}
	_, _ = fin.Finalize(context.Background(), s)
	out := &convoyv1alpha1.GitSource{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(gs), out)).To(Succeed())
	return out
}

func TestStatusFinalizer(t *testing.T) {
	c, patches := newFixture(t)
	rec := events.NewFakeRecorder(10)

	t.Run("success sets Ready, bumps observedGeneration and records the request", func(t *testing.T) {
		g := NewWithT(t)
		out := pass(t, c, rec, Summary{Interval: time.Minute, Message: "ok", Event: "new revision"}, nil)
		g.Expect(IsReady(out)).To(BeTrue())
		g.Expect(out.Status.ObservedGeneration).To(Equal(int64(2)))
		g.Expect(out.Status.LastHandledReconcileAt).To(Equal("now"))
		g.Expect(*patches).To(Equal(1))
		g.Expect(<-rec.Events).To(ContainSubstring("new revision"))
	})
	t.Run("an identical pass patches nothing and emits nothing", func(t *testing.T) {
		g := NewWithT(t)
		pass(t, c, rec, Summary{Interval: time.Minute, Message: "ok"}, nil)
		g.Expect(*patches).To(Equal(1))
		g.Expect(rec.Events).To(BeEmpty())
	})
	t.Run("transient failure sets Reconciling and keeps observedGeneration", func(t *testing.T) {
		g := NewWithT(t)
		out := pass(t, c, rec, Summary{Err: Retryf("GitOperationFailed", "boom"), Interval: time.Minute},
			func(gs *convoyv1alpha1.GitSource) { gs.Generation = 3 })
		ready := Get(out, convoyv1alpha1.ReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal("GitOperationFailed"))
		g.Expect(Get(out, convoyv1alpha1.ReconcilingCondition).Reason).To(Equal(convoyv1alpha1.ProgressingWithRetryReason))
		g.Expect(out.Status.ObservedGeneration).To(Equal(int64(2)))
		g.Expect(<-rec.Events).To(HavePrefix(corev1.EventTypeWarning))
	})
	t.Run("recovery emits an event", func(t *testing.T) {
		g := NewWithT(t)
		out := pass(t, c, rec, Summary{Interval: time.Minute, Message: "ok"}, nil)
		g.Expect(Get(out, convoyv1alpha1.ReconcilingCondition)).To(BeNil())
		g.Expect(<-rec.Events).To(ContainSubstring(RecoveredReason))
	})
	t.Run("stall sets Stalled and bumps observedGeneration", func(t *testing.T) {
		g := NewWithT(t)
		out := pass(t, c, rec, Summary{Err: Stallf("InvalidSpec", "key %q is missing", "x")},
			func(gs *convoyv1alpha1.GitSource) { gs.Generation = 4 })
		g.Expect(IsTrue(out, convoyv1alpha1.StalledCondition)).To(BeTrue())
		g.Expect(Get(out, convoyv1alpha1.ReconcilingCondition)).To(BeNil())
		g.Expect(Get(out, convoyv1alpha1.ReadyCondition).Message).To(ContainSubstring(`key "x" is missing`))
		g.Expect(out.Status.ObservedGeneration).To(Equal(int64(4)))
		<-rec.Events
	})
	t.Run("waiting repeats no event", func(t *testing.T) {
		g := NewWithT(t)
		pass(t, c, rec, Summary{Err: Waitf("RefNotFound", 0, "no ref")}, nil)
		g.Expect(<-rec.Events).To(ContainSubstring("RefNotFound"))
		pass(t, c, rec, Summary{Err: Waitf("RefNotFound", 0, "no ref")}, nil)
		g.Expect(rec.Events).To(BeEmpty())
	})
	t.Run("a true negative condition keeps Ready false on success", func(t *testing.T) {
		g := NewWithT(t)
		out := pass(t, c, rec, Summary{Interval: time.Minute}, func(gs *convoyv1alpha1.GitSource) {
			MarkTrue(gs, convoyv1alpha1.FetchFailedCondition, "StorageLimitExceeded", "too big")
		})
		g.Expect(Get(out, convoyv1alpha1.ReadyCondition).Reason).To(Equal("StorageLimitExceeded"))
	})
}

func TestStatusFinalizerAggregatesPatchError(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(convoyv1alpha1.AddToScheme(scheme)).To(Succeed())
	gs := &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gs"}}
	boom := errors.New("api down")
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(gs).WithStatusSubresource(gs).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return boom
		}}).Build()
	fin := NewStatusFinalizer(c, gs, StatusFields{}, StatusOptions{})
	_, err := fin.Finalize(context.Background(), Summary{Err: Retryf("X", "first")})
	g.Expect(errors.Is(err, boom)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("first"))
}

// staleBase returns the GitSource as a cache that has not seen the latest write would: the
// stored object with an older resourceVersion and an older status.
func staleBase(t *testing.T, c client.Client, older func(*convoyv1alpha1.GitSource)) *convoyv1alpha1.GitSource {
	t.Helper()
	gs := &convoyv1alpha1.GitSource{}
	NewWithT(t).Expect(c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "gs"}, gs)).To(Succeed())
	stale := gs.DeepCopy()
	older(stale)
	return stale
}

// A pass that starts from a stale cache must not leave the newer write's fields next to its own:
// the patch is refused and computed again against the object as the server has it.
func TestStatusPatchOfAStaleBaseIsComputedAgainstTheServer(t *testing.T) {
	ctx := context.Background()
	written := &WrittenVersions{}
	t.Run("a field the pass left as the stale base had it", func(t *testing.T) {
		g := NewWithT(t)
		c, _ := newFixture(t)
		// The server holds an earlier pass's write: lastHandledReconcileAt "b"; the stale base still says "a".
		server := staleBase(t, c, func(*convoyv1alpha1.GitSource) {})
		server.Status.LastHandledReconcileAt = "b"
		g.Expect(c.Status().Update(ctx, server)).To(Succeed())
		base := staleBase(t, c, func(gs *convoyv1alpha1.GitSource) { gs.Status.LastHandledReconcileAt = "a"; gs.ResourceVersion = "1" })
		fin := NewStatusFinalizer(c, base, StatusFields{ObservedGeneration: &base.Status.ObservedGeneration},
			StatusOptions{Written: written})
		base.Status.LastHandledReconcileAt = "a" // this pass's result: what the stale base had
		_, err := fin.Finalize(ctx, Summary{Interval: time.Minute})
		g.Expect(err).NotTo(HaveOccurred())
		out := &convoyv1alpha1.GitSource{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(base), out)).To(Succeed())
		g.Expect(out.Status.LastHandledReconcileAt).To(Equal("a"), "this pass's value, not the earlier write's")
		g.Expect(IsReady(out)).To(BeTrue())
	})
	t.Run("a pass equal to a base older than the last write", func(t *testing.T) {
		g := NewWithT(t)
		c, _ := newFixture(t)
		first := staleBase(t, c, func(*convoyv1alpha1.GitSource) {})
		fin := NewStatusFinalizer(c, first, StatusFields{}, StatusOptions{Written: written})
		first.Status.LastHandledReconcileAt = "b"
		_, err := fin.Finalize(ctx, Summary{Interval: time.Minute})
		g.Expect(err).NotTo(HaveOccurred())
		// The next pass starts from the cache, which has not seen that write: "", no Ready.
		base := staleBase(t, c, func(gs *convoyv1alpha1.GitSource) {
			gs.Status = convoyv1alpha1.GitSourceStatus{}
			gs.ResourceVersion = "1"
		})
		MarkTrue(base, convoyv1alpha1.ReadyCondition, convoyv1alpha1.SucceededReason, "")
		base.Status.Conditions[0].LastTransitionTime = metav1.Now()
		fin = NewStatusFinalizer(c, base, StatusFields{}, StatusOptions{Written: written})
		_, err = fin.Finalize(ctx, Summary{Interval: time.Minute})
		g.Expect(err).NotTo(HaveOccurred())
		out := &convoyv1alpha1.GitSource{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(base), out)).To(Succeed())
		g.Expect(out.Status.LastHandledReconcileAt).To(BeEmpty(), "this pass's status, though equal to its stale base")
	})
}

// A pass that adds its finalizer first (a locked metadata patch) gets a newer resourceVersion
// back; its status patch must lock to that version, not be refused as stale and sent again.
func TestStatusPatchAfterTheFinalizerWriteIsSentOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c, patches := newFixture(t)
	gs, fin := finalizerWritten(t, c, StatusOptions{Written: &WrittenVersions{}, Reader: failingReader{}})
	_, err := fin.Finalize(ctx, Summary{Interval: time.Minute})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*patches).To(Equal(1), "one status patch, not a refused one and a retry")
	out := &convoyv1alpha1.GitSource{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(gs), out)).To(Succeed())
	g.Expect(IsReady(out)).To(BeTrue())
	g.Expect(out.Finalizers).To(ContainElement(convoyv1alpha1.Finalizer))

	// Its next pass starts from that version with nothing to change: no request at all.
	fin = NewStatusFinalizer(c, out, StatusFields{ObservedGeneration: &out.Status.ObservedGeneration},
		StatusOptions{Reader: failingReader{}})
	_, err = fin.Finalize(ctx, Summary{Interval: time.Minute})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*patches).To(Equal(1))
}

// Another writer between the pass's finalizer write and its status patch makes that patch
// refused, and the pass computes it again against the object the server has.
func TestStatusPatchAfterTheFinalizerWriteStillSeesAnotherWriter(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c, patches := newFixture(t)
	gs, fin := finalizerWritten(t, c, StatusOptions{Written: &WrittenVersions{}})

	other := &convoyv1alpha1.GitSource{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(gs), other)).To(Succeed())
	other.Status.Artifact = &convoyv1alpha1.Artifact{Revision: "main@sha1:other"}
	g.Expect(c.Status().Update(ctx, other)).To(Succeed())

	_, err := fin.Finalize(ctx, Summary{Interval: time.Minute})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*patches).To(Equal(2), "the locked patch refused, then computed again")
	out := &convoyv1alpha1.GitSource{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(gs), out)).To(Succeed())
	g.Expect(IsReady(out)).To(BeTrue())
	g.Expect(out.Status.ObservedGeneration).To(Equal(int64(2)))
}

// finalizerWritten starts a pass over the stored GitSource and writes its finalizer the way a
// pass does, locked to the version the pass read; the pass's object holds the version the
// write answered.
func finalizerWritten(t *testing.T, c client.Client, opts StatusOptions) (*convoyv1alpha1.GitSource, *StatusFinalizer) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	gs := &convoyv1alpha1.GitSource{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "gs"}, gs)).To(Succeed())
	fin := NewStatusFinalizer(c, gs, StatusFields{ObservedGeneration: &gs.Status.ObservedGeneration}, opts)
	base := gs.DeepCopy()
	gs.Finalizers = append(gs.Finalizers, convoyv1alpha1.Finalizer)
	g.Expect(c.Patch(ctx, gs, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))).To(Succeed())
	g.Expect(gs.ResourceVersion).NotTo(Equal(base.ResourceVersion))
	return gs, fin
}

// failingReader fails every read: a test that expects no re-read after a conflict uses it.
type failingReader struct{}

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("unexpected read")
}

func (failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("unexpected list")
}

func TestStatusPatchComparesStatusesAsTheyAreStored(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	withReady := func(when time.Time, msg string) *convoyv1alpha1.Package {
		p := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 2}}
		p.Status.Conditions = []metav1.Condition{{Type: convoyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
			Reason: "RevisionAvailable", Message: msg, LastTransitionTime: metav1.NewTime(when)}}
		return p
	}
	for _, tc := range []struct {
		name          string
		before, after *convoyv1alpha1.Package
		changed       bool
	}{
		{"an equal status", withReady(at, "ok"), withReady(at, "ok"), false},
		{"a change of the metadata only", withReady(at, "ok"), func() *convoyv1alpha1.Package {
			p := withReady(at, "ok")
			p.Generation = 3
			return p
		}(), false},
		{"a time that differs below the second the API server stores", withReady(at, "ok"), withReady(at.Add(time.Millisecond), "ok"), false},
		{"a changed message", withReady(at, "ok"), withReady(at, "broken"), true},
		{"an empty list where there was none", func() *convoyv1alpha1.Package {
			p := withReady(at, "ok")
			p.Status.Inventory = nil
			return p
		}(), func() *convoyv1alpha1.Package {
			p := withReady(at, "ok")
			p.Status.Inventory = []convoyv1alpha1.InventoryEntry{}
			return p
		}(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			data, changed, err := statusPatch(tc.before, tc.after)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(changed).To(Equal(tc.changed))
			if tc.changed {
				g.Expect(string(data)).To(ContainSubstring(`"message":"broken"`))
			}
		})
	}
}

func TestStatusPatchOfAnObjectWithoutATypedStatus(t *testing.T) {
	g := NewWithT(t)
	obj := func(phase string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "u"},
			"status": map[string]any{"phase": phase, "kept": "yes"}}}
		return u
	}
	_, changed, err := statusPatch(obj("Ready"), obj("Ready"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse())
	data, changed, err := statusPatch(obj("Ready"), obj("Failed"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(string(data)).To(Equal(`{"status":{"phase":"Failed"}}`))
}
