package synccontroller

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
)

// The access check reads the HostedClusterPackage that owns a Package.
//
// +kubebuilder:rbac:groups=convoy.dev,resources=hostedclusterpackages,verbs=get;list;watch

// reconcileSourceAccess stalls a Package that names a GitSource of another namespace without
// the right to: the GitSource's spec.accessFrom must select the Package's namespace, or the
// Package must be owned by a HostedClusterPackage that ships this very source. Packages of
// the GitSource's own namespace always may use it.
func (r *PackageReconciler) reconcileSourceAccess(ctx context.Context, s *scope) error {
	obj := s.obj.(*convoyv1alpha1.Package)
	ns, name := obj.SourceKey()
	if ns == obj.Namespace {
		return nil
	}
	if ok, err := r.ownedByRollout(ctx, obj); ok || err != nil {
		return err
	}
	gs := &convoyv1alpha1.GitSource{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, gs); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // reconcileSource or the render says the source is missing
		}
		return err
	}
	allowed, err := r.namespaceAllowed(ctx, gs.Spec.AccessFrom, obj.Namespace)
	if err != nil || allowed {
		return err
	}
	return pass.Stallf(convoyv1alpha1.CrossNamespaceRefRefusedReason,
		"GitSource %s/%s does not allow Packages of namespace %s: its spec.accessFrom.namespaceSelectors must select the namespace",
		ns, name, obj.Namespace)
}

// ownedByRollout reports a Package controlled by an existing HostedClusterPackage of the
// same name and UID (the rollout names its Packages after itself). Note: the owner is looked
// up, not trusted: forging the reference takes the UID of a cluster-scoped object, which only
// those who may read HostedClusterPackages know. The template's source is not compared, so
// that Packages still pinned to a revision of an earlier template keep working.
func (r *PackageReconciler) ownedByRollout(ctx context.Context, obj *convoyv1alpha1.Package) (bool, error) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "HostedClusterPackage" || ref.APIVersion != convoyv1alpha1.GroupVersion.String() ||
		ref.Name != obj.Name {
		return false, nil
	}
	owner := &metav1.PartialObjectMetadata{}
	owner.SetGroupVersionKind(convoyv1alpha1.GroupVersion.WithKind("HostedClusterPackage"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, owner); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return owner.UID == ref.UID, nil
}

// namespaceAllowed reports whether access selects the namespace.
func (r *PackageReconciler) namespaceAllowed(ctx context.Context, access *convoyv1alpha1.AccessFrom, namespace string) (bool, error) {
	if access == nil {
		return false, nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(namespaceGVK)
	if err := r.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return false, err
	}
	for i := range access.NamespaceSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&access.NamespaceSelectors[i])
		if err != nil {
			return false, pass.Stallf(convoyv1alpha1.InvalidSpecReason, "spec.accessFrom.namespaceSelectors[%d] of the GitSource: %w", i, err)
		}
		if sel.Matches(labels.Set(ns.Labels)) {
			return true, nil
		}
	}
	return false, nil
}

// sourceIndex indexes every Package, pinned or not, by its GitSource's "<namespace>/<name>".
const sourceIndex = ".spec.sourceRef"

// indexSource returns the GitSource key of a Package.
func indexSource(o client.Object) []string {
	p, ok := o.(*convoyv1alpha1.Package)
	if !ok {
		return nil
	}
	return []string{sourceKey(p).String()}
}

// accessFromChanged passes GitSource updates that change spec.accessFrom, so that the
// Packages it now admits (or no longer admits) are looked at again.
func accessFromChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldGS, okOld := e.ObjectOld.(*convoyv1alpha1.GitSource)
			newGS, okNew := e.ObjectNew.(*convoyv1alpha1.GitSource)
			return okOld && okNew && !equality.Semantic.DeepEqual(oldGS.Spec.AccessFrom, newGS.Spec.AccessFrom)
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
