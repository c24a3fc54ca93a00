package devdemo

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// orderRecorder watches the Packages of a HostedClusterPackage and records, per commit, the
// HostedClusters in the order their Package was pinned to it. A watch delivers the writes in
// the order the API server made them, which polling cannot tell apart when they come quickly.
type orderRecorder struct {
	mu    sync.Mutex
	order map[string][]string
	seen  map[string]bool
}

// startOrderRecorder watches until ctx ends.
func startOrderRecorder(ctx context.Context, cfg *rest.Config, hcpkg string) (*orderRecorder, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: simfleet.NewScheme()})
	if err != nil {
		return nil, err
	}
	w, err := c.Watch(ctx, &convoyv1alpha1.PackageList{}, client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: hcpkg})
	if err != nil {
		return nil, err
	}
	r := &orderRecorder{order: map[string][]string{}, seen: map[string]bool{}}
	go r.consume(ctx, w)
	return r, nil
}

// consume records the events of w until ctx ends or w closes.
func (r *orderRecorder) consume(ctx context.Context, w watch.Interface) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if pkg, isPkg := ev.Object.(*convoyv1alpha1.Package); isPkg && ev.Type != watch.Deleted {
				r.record(pkg)
			}
		}
	}
}

// record notes pkg's commit the first time its Package has it.
func (r *orderRecorder) record(pkg *convoyv1alpha1.Package) {
	commit := pkg.Spec.Revision
	key := commit + "/" + pkg.Namespace
	r.mu.Lock()
	defer r.mu.Unlock()
	if commit == "" || r.seen[key] {
		return
	}
	r.seen[key] = true
	r.order[commit] = append(r.order[commit], clusterOfNamespace(pkg.Namespace))
}

// orderOf returns the HostedClusters pinned to commit so far, in order.
func (r *orderRecorder) orderOf(commit string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.order[commit]...)
}
