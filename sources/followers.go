package sources

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// RequestsForFollowers returns a watch mapper from a GitSource to the objects that follow it:
// those newList lists whose field index holds the GitSource's Key (as a string). Controllers
// whose objects read a GitSource's artifact (Packages, HostedClusterPackages) use it with an
// index of their own.
func RequestsForFollowers(c client.Reader, newList func() client.ObjectList, index string) handler.MapFunc {
	return func(ctx context.Context, gs client.Object) []reconcile.Request {
		list := newList()
		key := KeyFor(gs.GetNamespace(), gs.GetName()).String()
		if err := c.List(ctx, list, client.MatchingFields{index: key}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the followers of a GitSource", "gitsource", key, "index", index)
			return nil
		}
		var reqs []reconcile.Request
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return reqs
	}
}
