package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// DefaultCoalesce is how long the hub gathers informer events before the pages are refreshed.
const DefaultCoalesce = 200 * time.Millisecond

// Options tune a Server.
type Options struct {
	// Coalesce is how long informer events are gathered before pages refresh; default
	// DefaultCoalesce.
	Coalesce time.Duration
	// Now is the clock of the rollout views; time.Now when nil.
	Now func() time.Time
}

// Server serves the dashboard from a cache of the management cluster.
type Server struct {
	cache  cache.Cache
	reader client.Reader
	hub    *Hub
	now    func() time.Time

	mu   sync.Mutex
	memo map[string]memoized
}

// memoized is the JSON of one view at one generation of the hub.
type memoized struct {
	gen  uint64
	data []byte
}

// watchedKinds are the kinds the dashboard reads, each through one informer. Secrets are not
// among them.
func watchedKinds() []client.Object {
	return []client.Object{&convoyv1alpha1.HostedClusterPackage{}, &convoyv1alpha1.Package{}, &convoyv1alpha1.GitSource{},
		&hyperv1.HostedCluster{}, &appsv1.ControllerRevision{}, &corev1.Event{}, &convoyv1alpha1.PartitionApproval{},
		&convoyv1alpha1.RolloutApproval{}}
}

// NewScheme returns the kinds the dashboard reads.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(convoyv1alpha1.AddToScheme(s))
	utilruntime.Must(hyperv1.AddToScheme(s))
	return s
}

// New builds a Server reading the management cluster of cfg; Start fills its cache.
func New(cfg *rest.Config, opts Options) (*Server, error) {
	revisions, err := labels.NewRequirement(convoyv1alpha1.HostedClusterPackageLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(cfg, cache.Options{Scheme: NewScheme(), ByObject: map[client.Object]cache.ByObject{
		// Only the revisions of HostedClusterPackages, not those of every DaemonSet.
		&appsv1.ControllerRevision{}: {Label: labels.NewSelector().Add(*revisions)},
		&corev1.Event{}:              {Field: fields.OneTermEqualSelector("involvedObject.kind", "Package")},
	}})
	if err != nil {
		return nil, fmt.Errorf("building the dashboard's cache: %w", err)
	}
	return newServer(c, c, opts), nil
}

// newServer serves views read from reader; c, when not nil, is started by Start.
func newServer(c cache.Cache, reader client.Reader, opts Options) *Server {
	if opts.Coalesce <= 0 {
		opts.Coalesce = DefaultCoalesce
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Server{cache: c, reader: reader, hub: NewHub(opts.Coalesce), now: opts.Now, memo: map[string]memoized{}}
}

// Start registers the informers, starts the cache and waits for it to sync; the cache runs
// until ctx is done.
func (s *Server) Start(ctx context.Context) error {
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.hub.Touch() },
		UpdateFunc: func(any, any) { s.hub.Touch() },
		DeleteFunc: func(any) { s.hub.Touch() },
	}
	for _, obj := range watchedKinds() {
		inf, err := s.cache.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watching %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
	}
	go func() { _ = s.cache.Start(ctx) }()
	if !s.cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("the dashboard's cache did not sync: %w", context.Cause(ctx))
	}
	return nil
}

// view returns the JSON of the view key as of the hub's generation gen, building it at most once
// per generation.
func (s *Server) view(ctx context.Context, key string, gen uint64, build func(context.Context) (any, error)) ([]byte, error) {
	s.mu.Lock()
	m, ok := s.memo[key]
	s.mu.Unlock()
	if ok && m.gen == gen {
		return m.data, nil
	}
	v, err := build(ctx)
	var data []byte
	if err == nil {
		data, err = json.Marshal(v)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, old := range s.memo {
		if old.gen < gen {
			delete(s.memo, k)
		}
	}
	s.memo[key] = memoized{gen: gen, data: data}
	return data, nil
}
