package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/manifests/diff"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/sync/engine"
	"github.com/convoy-gitops/convoy/sync/hosted"
	"github.com/convoy-gitops/convoy/sync/synccontroller"
)

// liveDiffOptions are the flags of `convoy diff` against a cluster.
type liveDiffOptions struct {
	kubeconfig    string
	pkg           string
	hostedCluster string
}

// bind registers the flags of the live diff.
func (o *liveDiffOptions) bind(fl *pflag.FlagSet) {
	fl.StringVar(&o.pkg, "package", "", "NAMESPACE/NAME of a Package: preview --revision against what the clusters hold (server-side dry run).")
	fl.StringVar(&o.hostedCluster, "hosted-cluster-package", "", "NAME of a HostedClusterPackage: preview --revision on one Package (the first by name) per partition.")
	fl.StringVar(&o.kubeconfig, "kubeconfig", "", "Kubeconfig of the management cluster, with --package (default: $KUBECONFIG, in-cluster, then ~/.kube/config).")
}

// enabled reports a live diff.
func (o *liveDiffOptions) enabled() bool { return o.pkg != "" || o.hostedCluster != "" }

// runLiveDiff previews ref on the Package, or on one Package per partition of the
// HostedClusterPackage, and returns one report per Package. It never writes: it reads, and
// applies with dryRun=All.
func runLiveDiff(ctx context.Context, stderr io.Writer, o *liveDiffOptions, ref string, budget manifests.RenderBudget) ([]*diff.Report, error) {
	if o.pkg != "" && o.hostedCluster != "" {
		return nil, errors.New("give --package or --hosted-cluster-package, not both")
	}
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: newCLIScheme()})
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	env := &synccontroller.ClusterEnvironment{Discovery: disc, Reader: c, Mapper: c.RESTMapper()}
	var pkgs []*convoyv1alpha1.Package
	if o.pkg != "" {
		p, err := getPackage(ctx, c, o.pkg)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	} else if pkgs, err = samplePackages(ctx, c, o.hostedCluster); err != nil {
		return nil, err
	}
	clients := hosted.NewClients(c, c, hosted.Options{})
	var reports []*diff.Report
	for _, p := range pkgs {
		r, err := previewPackage(ctx, stderr, previewer{c, clients, env}, p, ref, budget)
		if err != nil {
			return nil, fmt.Errorf("previewing Package %s/%s: %w", p.Namespace, p.Name, err)
		}
		reports = append(reports, r)
	}
	return reports, nil
}

// getPackage reads the Package NAMESPACE/NAME.
func getPackage(ctx context.Context, c client.Reader, ref string) (*convoyv1alpha1.Package, error) {
	key, err := splitRef("--package", ref)
	if err != nil {
		return nil, err
	}
	p := &convoyv1alpha1.Package{}
	if err := c.Get(ctx, key, p); err != nil {
		return nil, fmt.Errorf("reading Package %s: %w", ref, err)
	}
	return p, nil
}

// samplePackages returns the first Package (by namespace and name) of each partition of the
// HostedClusterPackage (cluster-scoped) ref, in partition name order.
func samplePackages(ctx context.Context, c client.Client, ref string) ([]*convoyv1alpha1.Package, error) {
	hcpkg := &convoyv1alpha1.HostedClusterPackage{}
	if err := c.Get(ctx, client.ObjectKey{Name: ref}, hcpkg); err != nil {
		return nil, fmt.Errorf("reading HostedClusterPackage %s: %w", ref, err)
	}
	list := &convoyv1alpha1.PackageList{}
	if err := c.List(ctx, list, client.MatchingLabels{convoyv1alpha1.HostedClusterPackageLabel: hcpkg.Name}); err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	chosen := map[string]*convoyv1alpha1.Package{}
	for i := range list.Items {
		p := &list.Items[i]
		partition := convoyv1alpha1.UnknownPartition
		if hc, err := hosted.Discover(ctx, c, p.Namespace); err == nil && hcpkg.Spec.Partition != nil {
			if v, ok := hc.Labels[hcpkg.Spec.Partition.LabelKey]; ok {
				partition = v
			}
		}
		if _, ok := chosen[partition]; !ok {
			chosen[partition] = p
		}
	}
	if len(chosen) == 0 {
		return nil, fmt.Errorf("HostedClusterPackage %s has no Packages yet", ref)
	}
	names := make([]string, 0, len(chosen))
	for k := range chosen {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]*convoyv1alpha1.Package, 0, len(names))
	for _, n := range names {
		out = append(out, chosen[n])
	}
	return out, nil
}

// previewer holds what previewing a Package reads: the management cluster, the hosted
// clusters, and the environment packages are rendered for, as the controller has them.
type previewer struct {
	client client.Client
	hosted *hosted.Clients
	env    *synccontroller.ClusterEnvironment
}

// previewPackage renders the Package at ref as the controller would and dry-runs it.
func previewPackage(ctx context.Context, stderr io.Writer, pv previewer,
	p *convoyv1alpha1.Package, ref string, budget manifests.RenderBudget) (*diff.Report, error) {
	c, clients := pv.client, pv.hosted
	commit, rendered, err := renderPackageAt(ctx, c, pv.env, p, ref, budget)
	if err != nil {
		return nil, err
	}
	rev := synccontroller.PackageRevision(commit, rendered)
	t := &engine.Target{Namespace: p.Namespace, Name: p.Name, Management: c}
	if p.Spec.Adopt != nil {
		t.AdoptFrom = p.Spec.Adopt.From
	}
	if rev.NeedsHostedCluster() || hasHostedEntries(p.Status.Inventory) {
		var kubeconfig *convoyv1alpha1.SecretKeyReference
		if p.Spec.HostedCluster != nil {
			kubeconfig = p.Spec.HostedCluster.KubeconfigSecretRef
		}
		if t.Hosted, err = clients.Client(ctx, p.Namespace, kubeconfig); err != nil {
			t.HostedUnavailable = err
		}
	}
	preview, err := engine.DryRun(ctx, t, rev, p.Status.Inventory)
	if err != nil {
		return nil, err
	}
	for _, l := range preview.Left {
		fmt.Fprintf(stderr, "a prune would leave %s\n", l)
	}
	return previewReport(fmt.Sprintf("Package %s/%s (live)", p.Namespace, p.Name), shortRef(ref, commit), preview)
}

// renderPackageAt resolves ref in the Package's GitSource, fetches it into a temporary store
// and renders the package with the Package's template data.
func renderPackageAt(ctx context.Context, c client.Reader, env *synccontroller.ClusterEnvironment,
	p *convoyv1alpha1.Package, ref string, budget manifests.RenderBudget) (string, *manifests.Rendered, error) {
	ns, name := p.SourceKey()
	gs := &convoyv1alpha1.GitSource{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, gs); err != nil {
		return "", nil, fmt.Errorf("reading GitSource %s/%s: %w", ns, name, err)
	}
	remote, err := remoteOf(ctx, c, gs)
	if err != nil {
		return "", nil, err
	}
	root, err := os.MkdirTemp("", "convoy-diff-")
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = os.RemoveAll(root) }()
	store, err := sources.NewStore(root, sources.StoreOptions{})
	if err != nil {
		return "", nil, err
	}
	key := sources.KeyFor(ns, name)
	if ref == "" {
		ref = gitRefName(gs.Spec.Ref)
	}
	rev, err := pollRef(ctx, store, key, remote, ref)
	if err != nil {
		return "", nil, remote.Redact(err)
	}
	fsys, err := store.Open(ctx, key, rev.Commit)
	if err != nil {
		return "", nil, remote.Redact(err)
	}
	hc, err := hosted.Discover(ctx, c, p.Namespace)
	if errors.Is(err, hosted.ErrNoHostedCluster) {
		hc, err = nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	data, err := synccontroller.PackageTemplateData(p, hc, rev.Commit)
	if err != nil {
		return "", nil, err
	}
	if data.Environment, err = env.Get(ctx); err != nil {
		return "", nil, fmt.Errorf("reading the cluster's environment: %w", err)
	}
	rendered, err := manifests.LoadWithBudget(fsys, strings.Trim(p.Spec.Path, "/"), data, budget)
	return rev.Commit, rendered, err
}

// remoteOf returns the GitSource's remote, with the credentials of its Secret if it names one.
func remoteOf(ctx context.Context, c client.Reader, gs *convoyv1alpha1.GitSource) (sources.Remote, error) {
	remote := sources.Remote{URL: gs.Spec.URL}
	if gs.Spec.SecretRef == nil {
		return remote, nil
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: gs.Namespace, Name: gs.Spec.SecretRef.Name}, secret); err != nil {
		return remote, fmt.Errorf("reading the Secret of GitSource %s/%s: %w", gs.Namespace, gs.Name, err)
	}
	auth, err := sources.AuthFromSecret(secret, gs.Spec.URL)
	if err != nil {
		return remote, fmt.Errorf("GitSource %s/%s: %w", gs.Namespace, gs.Name, err)
	}
	remote.Auth = auth
	return remote, nil
}

// gitRefName returns the name pollRef resolves for a GitSource's ref.
func gitRefName(r convoyv1alpha1.GitRef) string {
	switch {
	case r.Commit != "":
		return r.Commit
	case r.Tag != "":
		return r.Tag
	}
	return r.Branch
}

// previewReport turns a dry-run preview into a diff report: each object's live state against
// the API server's dry-run answer, then the objects a prune would delete.
func previewReport(from, to string, p *engine.Preview) (*diff.Report, error) {
	r := &diff.Report{From: from, To: to, Phases: []diff.PhaseDiff{}}
	for _, ph := range p.Phases {
		class := classOf(ph.Class)
		for _, o := range ph.Objects {
			d, err := objectChange(o)
			if err != nil {
				return nil, err
			}
			if d != nil {
				r.Add(ph.Name, class, *d)
			}
		}
	}
	for _, pr := range p.Pruned {
		d, err := diff.Objects(pr.Live, nil)
		if err != nil {
			return nil, err
		}
		d.Note = "a prune would delete it"
		r.Add(pr.Phase, inventoryClass(pr.Cluster), *d)
	}
	return r, nil
}

// objectChange is what a dry run says of one object: nil when the server would keep it as it
// is, a note without a diff when a sync would refuse it.
func objectChange(o engine.ObjectPreview) (*diff.ObjectDiff, error) {
	if o.Refused == "" {
		return diff.Objects(o.Live, o.Applied)
	}
	return &diff.ObjectDiff{Action: diff.Changed, APIVersion: o.Applied.GetAPIVersion(), Kind: o.Applied.GetKind(),
		Namespace: o.Applied.GetNamespace(), Name: o.Applied.GetName(), Note: "a sync would refuse it: " + o.Refused}, nil
}

// classOf names a phase class as the offline diff does.
func classOf(class string) string {
	if class == "" || class == convoyv1alpha1.ClassManagement {
		return "management"
	}
	return class
}

// inventoryClass returns the phase class of an inventory cluster.
func inventoryClass(cluster string) string {
	if cluster == convoyv1alpha1.InventoryClusterHosted {
		return convoyv1alpha1.ClassHostedCluster
	}
	return "management"
}

// hasHostedEntries reports inventory entries inside the hosted cluster.
func hasHostedEntries(inv []convoyv1alpha1.InventoryEntry) bool {
	for _, e := range inv {
		if e.Cluster == convoyv1alpha1.InventoryClusterHosted {
			return true
		}
	}
	return false
}

// splitRef parses NAMESPACE/NAME.
func splitRef(flag, ref string) (client.ObjectKey, error) {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" {
		return client.ObjectKey{}, fmt.Errorf("%s %q: want NAMESPACE/NAME", flag, ref)
	}
	return client.ObjectKey{Namespace: ns, Name: name}, nil
}
