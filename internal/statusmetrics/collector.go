package statusmetrics

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// listTimeout bounds the cache reads of one scrape.
const listTimeout = 10 * time.Second

// exportedConditions are the condition types exported.
var exportedConditions = map[string]bool{
	convoyv1alpha1.ReadyCondition:       true,
	convoyv1alpha1.StalledCondition:     true,
	convoyv1alpha1.FetchFailedCondition: true,
}

// conditionDesc describes convoy_resource_condition.
var conditionDesc = prometheus.NewDesc("convoy_resource_condition",
	"A condition of a convoy object (Ready, Stalled, FetchFailed): 1 for the status and reason it has.",
	[]string{"kind", "namespace", "name", "type", "status", "reason"}, nil)

// Collector reads the conditions, at each scrape, from the cache of the manager started last
// in this process (tests and convoy-dev may run several one after the other).
type Collector struct {
	mu      sync.Mutex
	readers []client.Reader
	// scraping serializes the scrapes, which share memo.
	scraping sync.Mutex
	memo     seriesMemo
}

// collector is the one registered with controller-runtime's registry.
var collector = &Collector{}

func init() {
	metrics.Registry.MustRegister(collector)
}

// Setup makes the collector read mgr's cache once it has synced, until mgr stops. Every replica
// exports the conditions, not only the leader.
func Setup(mgr ctrl.Manager) error {
	return mgr.Add(everyReplica(func(ctx context.Context) error {
		r := mgr.GetCache()
		collector.push(r)
		<-ctx.Done()
		collector.remove(r)
		return nil
	}))
}

// everyReplica is a runnable that runs whether or not this replica leads.
type everyReplica manager.RunnableFunc

// Start runs the function.
func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection is false: every replica serves metrics.
func (everyReplica) NeedLeaderElection() bool { return false }

// push makes r the reader of the scrapes.
func (c *Collector) push(r client.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readers = append(c.readers, r)
}

// remove forgets r.
func (c *Collector) remove(r client.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readers = slices.DeleteFunc(c.readers, func(x client.Reader) bool { return x == r })
}

// reader returns the reader of the scrapes; nil when no manager runs.
func (c *Collector) reader() client.Reader {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.readers) == 0 {
		return nil
	}
	return c.readers[len(c.readers)-1]
}

// Describe sends the one descriptor.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- conditionDesc }

// Collect sends the exported conditions of every GitSource, Package and HostedClusterPackage.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	r := c.reader()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	c.scraping.Lock()
	defer c.scraping.Unlock()
	c.memo.begin()
	defer c.memo.end()
	for _, k := range []struct {
		kind string
		obj  client.Object
		list client.ObjectList
	}{
		{"GitSource", &convoyv1alpha1.GitSource{}, &convoyv1alpha1.GitSourceList{}},
		{"Package", &convoyv1alpha1.Package{}, &convoyv1alpha1.PackageList{}},
		{"HostedClusterPackage", &convoyv1alpha1.HostedClusterPackage{}, &convoyv1alpha1.HostedClusterPackageList{}},
	} {
		each(ctx, r, k.obj, k.list, func(obj client.Object) {
			o, ok := obj.(conditioned)
			if !ok {
				return
			}
			for _, m := range c.memo.seriesOf(obj, func() []prometheus.Metric { return series(k.kind, obj, o.GetConditions()) }) {
				ch <- m
			}
		})
	}
}

// conditioned is an object with status conditions.
type conditioned interface{ GetConditions() []metav1.Condition }

// informers is what a manager's cache offers beyond a client.Reader.
type informers interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// each calls fn, read-only, with every object of obj's kind that r holds. A cache's objects are
// read where its informer keeps them, neither copied nor listed into a new slice: at 10,000
// Packages, a list copied from the cache was about 50 MB of garbage at every scrape. Any other
// reader lists into list.
func each(ctx context.Context, r client.Reader, obj client.Object, list client.ObjectList, fn func(client.Object)) {
	if inf, ok := r.(informers); ok {
		if i, err := inf.GetInformer(ctx, obj); err == nil {
			if s, ok := i.(interface{ GetStore() toolscache.Store }); ok {
				for _, o := range s.GetStore().List() {
					if co, ok := o.(client.Object); ok {
						fn(co)
					}
				}
				return
			}
		}
	}
	if r.List(ctx, list, client.UnsafeDisableDeepCopy) != nil {
		return
	}
	_ = apimeta.EachListItem(list, func(o runtime.Object) error {
		if co, ok := o.(client.Object); ok {
			fn(co)
		}
		return nil
	})
}

// series makes the series of the exported conditions of one object.
func series(kind string, obj client.Object, conds []metav1.Condition) []prometheus.Metric {
	var out []prometheus.Metric
	for _, cond := range conds {
		if !exportedConditions[cond.Type] {
			continue
		}
		out = append(out, prometheus.MustNewConstMetric(conditionDesc, prometheus.GaugeValue, 1,
			kind, obj.GetNamespace(), obj.GetName(), cond.Type, string(cond.Status), cond.Reason))
	}
	return out
}
