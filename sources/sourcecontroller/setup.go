package sourcecontroller

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convoy-gitops/convoy/sources"
)

// Options are the command-line settings of the sources subsystem.
type Options struct {
	// StoragePath is the directory of the store (--storage-path).
	StoragePath string
	// WebhookAddr is the listen address of the webhook receiver; empty disables it
	// (--webhook-addr).
	WebhookAddr string
	// WebhookMaxBodyBytes bounds webhook bodies (--webhook-max-body-bytes).
	WebhookMaxBodyBytes int64
	// WebhookReplayWindow is how long a webhook body is remembered against replays
	// (--webhook-replay-window).
	WebhookReplayWindow time.Duration
	// Limits bound the trees of stored commits (--git-max-files, --git-max-file-size,
	// --git-max-total-size).
	Limits sources.Limits
	// Concurrency is the number of GitSources polled in parallel (--gitsource-concurrency).
	Concurrency int
	// URLPolicy allows file:// remotes and credentials over http:// (--allow-file-urls,
	// --allow-insecure-http); both are refused by default.
	URLPolicy sources.URLPolicy
	// MaxRepoBytes bounds the size of one GitSource's repository after garbage collection
	// (--storage-max-repo-size).
	MaxRepoBytes int64
}

// BindFlags registers the flags of o on fs, with defaults.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	def := sources.DefaultLimits()
	fs.StringVar(&o.StoragePath, "storage-path", "/var/lib/convoy/sources", "Directory holding one bare Git repository per GitSource.")
	fs.StringVar(&o.WebhookAddr, "webhook-addr", ":9292", "Listen address of the Git webhook receiver (POST /hooks/<namespace>/<name>); empty disables it.")
	fs.Int64Var(&o.WebhookMaxBodyBytes, "webhook-max-body-bytes", DefaultWebhookMaxBodyBytes, "Largest webhook request body accepted.")
	fs.DurationVar(&o.WebhookReplayWindow, "webhook-replay-window", DefaultWebhookReplayWindow,
		"How long a webhook call's signed body is remembered: the same body for the same GitSource within it is a replay, answered 200 without a poll; negative remembers nothing.")
	fs.IntVar(&o.Limits.MaxFiles, "git-max-files", def.MaxFiles, "Largest number of files in a source tree.")
	fs.Int64Var(&o.Limits.MaxFileSize, "git-max-file-size", def.MaxFileSize, "Largest file in a source tree, in bytes.")
	fs.Int64Var(&o.Limits.MaxTotalBytes, "git-max-total-size", def.MaxTotalBytes, "Largest total size of a source tree, in bytes.")
	fs.IntVar(&o.Concurrency, "gitsource-concurrency", 4, "Number of GitSources polled in parallel.")
	fs.BoolVar(&o.URLPolicy.AllowFileURLs, strings.TrimPrefix(sources.AllowFileURLsFlag, "--"), false, "Allow GitSources with file:// URLs (they read the controller's disk).")
	fs.BoolVar(&o.URLPolicy.AllowInsecureHTTP, strings.TrimPrefix(sources.AllowInsecureHTTPFlag, "--"), false, "Allow GitSources to send credentials over plain http://.")
	fs.Int64Var(&o.MaxRepoBytes, "storage-max-repo-size", sources.DefaultMaxRepoBytes, "Largest size of the repository of one GitSource after garbage collection, in bytes.")
}

// Setup creates the store, registers the GitSource controller and, when WebhookAddr is set,
// the webhook receiver on mgr. It returns the store, which the Package controller reads
// through Open.
func Setup(mgr ctrl.Manager, o Options) (*sources.Store, error) {
	store, err := sources.NewStore(o.StoragePath, sources.StoreOptions{Limits: o.Limits, MaxRepoBytes: o.MaxRepoBytes})
	if err != nil {
		return nil, err
	}
	r := &GitSourceReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Store: store, URLPolicy: o.URLPolicy}
	if err := r.SetupWithManager(mgr, GitSourceReconcilerOptions{MaxConcurrentReconciles: o.Concurrency}); err != nil {
		return nil, fmt.Errorf("setting up the GitSource controller: %w", err)
	}
	if o.WebhookAddr != "" {
		recv := &WebhookReceiver{Client: mgr.GetClient(), SecretReader: mgr.GetAPIReader(),
			Addr: o.WebhookAddr, MaxBodyBytes: o.WebhookMaxBodyBytes, ReplayWindow: o.WebhookReplayWindow}
		if err := mgr.Add(recv); err != nil {
			return nil, fmt.Errorf("adding the webhook receiver: %w", err)
		}
	}
	return store, nil
}

// SetupFetchOnly creates the store of a shard replica: it polls no GitSource and serves no
// webhook (the unsharded replica does both, once per management cluster). A Package of the
// shard reads the commit of its GitSource's status.artifact (or its pinned spec.revision) and
// the store fetches that one commit on demand from the GitSource's URL, with its credentials,
// into the replica's own repository; orphaned repositories are removed at start as on the
// polling replica, and the repositories are garbage-collected every minute (collectFetchOnly).
func SetupFetchOnly(mgr ctrl.Manager, o Options) (*sources.Store, error) {
	store, err := sources.NewStore(o.StoragePath, sources.StoreOptions{Limits: o.Limits, MaxRepoBytes: o.MaxRepoBytes})
	if err != nil {
		return nil, err
	}
	r := &GitSourceReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Store: store, URLPolicy: o.URLPolicy}
	store.SetResolver(r.resolveRemote)
	if err := mgr.Add(manager.RunnableFunc(r.pruneOrphans(mgr))); err != nil {
		return nil, err
	}
	if err := mgr.Add(manager.RunnableFunc(r.collectFetchOnly(mgr, collectEvery))); err != nil {
		return nil, err
	}
	return store, nil
}
