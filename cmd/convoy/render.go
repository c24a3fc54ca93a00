package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/sources/helmrepo"
)

// renderOptions are the flags of `convoy render`.
type renderOptions struct {
	data templateDataFlags
	// testCase renders a Package Operator test.template case of a local package.
	testCase string
	url      string
	ref      string
	path     string
}

// newRenderCmd builds `convoy render`, which prints a package's phases and objects as YAML,
// from a local directory or from a Git repository, without a cluster.
func newRenderCmd() *cobra.Command {
	var o renderOptions
	cmd := &cobra.Command{
		Use:   "render [DIR]",
		Short: "Render a package into its phases and objects, offline",
		Long: "Render a package directory (a local DIR, or --path in the Git repository --url at --ref)\n" +
			"for the given config and context, and print its objects as YAML grouped by phase.",
		Example: "  convoy render examples/packages/extra-component --config values.yaml --hosted-cluster clusters/demo\n" +
			"  convoy render --url https://git.example.com/fleet/addons.git --ref main --path packages/extra-component",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRender(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, &o)
		},
	}
	o.data.bind(cmd.Flags())
	cmd.Flags().StringVar(&o.url, "url", "", "Git repository URL to render from instead of a local directory.")
	cmd.Flags().StringVar(&o.ref, "ref", "main", "Branch, tag or full commit hash to render with --url.")
	cmd.Flags().StringVar(&o.path, "path", ".", "Package directory inside the repository, with --url.")
	cmd.Flags().StringVar(&o.testCase, "test-case", "", "Render the named test.template case of a Package Operator package (a local DIR) instead of the flags' data.")
	return cmd
}

// runRender loads the package and prints it; load problems go to stderr, one per line.
func runRender(ctx context.Context, stdout, stderr io.Writer, args []string, o *renderOptions) error {
	if (o.url == "") == (len(args) == 0) {
		return errors.New("give either a package directory or --url")
	}
	if o.testCase != "" && o.url != "" {
		return errors.New("--test-case renders a local package directory, not --url")
	}
	var (
		rendered *manifests.Rendered
		label    string
		err      error
	)
	if o.url != "" {
		// Note: the URL may carry credentials; neither it nor an error may print them.
		label = sources.RedactURL(o.url) + "//" + o.path
		rendered, err = renderRemote(ctx, o)
		err = sources.Remote{URL: o.url}.Redact(err)
	} else {
		label = args[0]
		rendered, err = renderLocalOrTestCase(args[0], o)
	}
	if err != nil {
		return reportLoadError(stderr, label, err)
	}
	printWarnings(stderr, label, rendered)
	return rendered.WriteYAML(stdout)
}

// renderLocalOrTestCase renders a local package for the flags, or for --test-case.
func renderLocalOrTestCase(dir string, o *renderOptions) (*manifests.Rendered, error) {
	if o.testCase != "" {
		return renderTestCase(dir, o.testCase, &o.data)
	}
	return renderLocal(dir, &o.data)
}

// renderLocal loads a package from a local directory; symlinks may not leave it.
func renderLocal(dir string, f *templateDataFlags) (*manifests.Rendered, error) {
	fsys, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	data, err := f.templateData(filepath.Base(filepath.Clean(dir)), "local")
	if err != nil {
		return nil, err
	}
	return manifests.LoadWithBudget(fsys, ".", data, f.budget)
}

// renderRemote loads a package from a Git repository through the sources store: the ref is
// resolved with an ls-remote, only its commit is fetched, into a temporary store, and the
// package is read straight from the object store. Access is anonymous.
func renderRemote(ctx context.Context, o *renderOptions) (*manifests.Rendered, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	root, err := os.MkdirTemp("", "convoy-render-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(root) }()
	store, err := sources.NewStore(root, sources.StoreOptions{})
	if err != nil {
		return nil, err
	}
	key := sources.KeyFor("convoy-render", "cli")
	rev, err := pollRef(ctx, store, key, sources.Remote{URL: o.url}, o.ref)
	if err != nil {
		return nil, err
	}
	fsys, err := store.Open(ctx, key, rev.Commit)
	if err != nil {
		return nil, err
	}
	data, err := o.data.templateData(path.Base(path.Clean("/"+o.path)), rev.Commit)
	if err != nil {
		return nil, err
	}
	return manifests.LoadWithBudget(fsys, strings.Trim(path.Clean(o.path), "/"), data, o.data.budget)
}

// pollRef fetches ref: a full commit hash, else a branch, else a tag of that name; an empty ref
// is the branch main.
func pollRef(ctx context.Context, store *sources.Store, key sources.Key, remote sources.Remote, ref string) (sources.Revision, error) {
	if ref == "" {
		ref = "main"
	}
	if sources.IsCommitHash(ref) {
		res, err := store.Poll(ctx, key, remote, convoyv1alpha1.GitRef{Commit: ref})
		return res.Revision, err
	}
	res, err := store.Poll(ctx, key, remote, convoyv1alpha1.GitRef{Branch: ref})
	var notFound *sources.RefNotFoundError
	if errors.As(err, &notFound) && !notFound.Empty {
		res, err = store.Poll(ctx, key, remote, convoyv1alpha1.GitRef{Tag: ref})
	}
	if err != nil {
		return sources.Revision{}, fmt.Errorf("resolving %q in %s: %w", ref, sources.RedactURL(remote.URL), err)
	}
	return res.Revision, nil
}

// openDir returns a directory as an fs.FS that refuses symlinks leading out of it.
func openDir(dir string) (fs.FS, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return root.FS(), nil
}

// reportLoadError prints load problems one per line, prefixed with the package location, and
// returns a summary error; other errors are returned as they are.
func reportLoadError(w io.Writer, label string, err error) error {
	var errs manifests.Errors
	if !errors.As(err, &errs) {
		return err
	}
	for _, e := range errs {
		loc := *e
		loc.File = strings.TrimSuffix(label, "/")
		if e.File != "" {
			loc.File += "/" + e.File
		}
		fmt.Fprintln(w, loc.Error())
	}
	return fmt.Errorf("%s: %d problem(s)", label, len(errs))
}

// templateDataFlags are the flags that build manifests.TemplateData, the render budget and
// where chart fetches may go, shared by render, validate and diff.
type templateDataFlags struct {
	budget           manifests.RenderBudget
	charts           chartFetchFlags
	configFile       string
	packageName      string
	packageNamespace string
	hostedCluster    string
	hcLabels         map[string]string
	component        string
	environmentFile  string
	revision         string
	scope            string
	apiVersions      []string
}

// bind registers the flags.
func (f *templateDataFlags) bind(fl *pflag.FlagSet) {
	fl.StringVar(&f.configFile, "config", "", "YAML file with the package config (.config).")
	fl.StringVar(&f.packageName, "package-name", "", "Name of the Package (.package.name; default: the directory name).")
	fl.StringVar(&f.packageNamespace, "package-namespace", "default", "Namespace of the Package (.package.namespace).")
	fl.StringVar(&f.hostedCluster, "hosted-cluster", "", "NAMESPACE/NAME of the HostedCluster (.hostedCluster; default: none).")
	fl.StringVar(&f.environmentFile, "environment", "", "YAML file with the environment (.environment: kubernetes.version, openShift, proxy, hyperShift), as in a PKO test case.")
	fl.StringVar(&f.component, "component", "", "Component of a multi-component Package Operator package (Package spec.component).")
	fl.StringToStringVar(&f.hcLabels, "hosted-cluster-labels", nil, "Labels of the HostedCluster, as key=value,key=value.")
	fl.StringVar(&f.revision, "revision", "", "Revision (.revision; default: the commit, or \"local\" for a directory).")
	fl.StringVar(&f.scope, "scope", "", "Scope to install a Package Operator package with (Package spec.scope): Namespaced, or Cluster "+
		"(a ClusterPackage in the hosted cluster: every phase there, no .package.metadata.namespace); default: Namespaced when the package supports it, else Cluster.")
	fl.StringArrayVarP(&f.apiVersions, "api-versions", "a", nil, "API version a chart sees in .Capabilities.APIVersions besides Helm's built-in set, as GROUP/VERSION or GROUP/VERSION/KIND "+
		"(v1/KIND for the core group), as helm template --api-versions; repeat the flag (the controller reads the target cluster's discovery instead).")
	f.budget.BindFlags(fl)
	f.charts.bind(fl)
}

// templateData builds the template data from the flags.
func (f *templateDataFlags) templateData(defaultName, defaultRevision string) (manifests.TemplateData, error) {
	data := manifests.TemplateData{
		Package:   manifests.PackageRef{Name: f.packageName, Namespace: f.packageNamespace},
		Revision:  f.revision,
		Component: f.component,
		Charts:    helmrepo.New(f.charts.options()),
		Scope:     f.scope,
	}
	if f.scope != "" && f.scope != convoyv1alpha1.ScopeNamespaced && f.scope != convoyv1alpha1.ScopeCluster {
		return data, fmt.Errorf("--scope %q: want Namespaced or Cluster", f.scope)
	}
	if data.Package.Name == "" {
		data.Package.Name = defaultName
	}
	if data.Revision == "" {
		data.Revision = defaultRevision
	}
	if f.hostedCluster != "" {
		ns, name, ok := strings.Cut(f.hostedCluster, "/")
		if !ok || ns == "" || name == "" {
			return data, fmt.Errorf("--hosted-cluster %q: want NAMESPACE/NAME", f.hostedCluster)
		}
		data.HostedCluster = &manifests.HostedClusterRef{Name: name, Namespace: ns, Labels: f.hcLabels}
	}
	if f.environmentFile != "" {
		env, err := readEnvironmentFile(f.environmentFile)
		if err != nil {
			return data, err
		}
		data.Environment = env
	}
	if err := f.addAPIVersions(&data); err != nil {
		return data, err
	}
	if f.configFile != "" {
		config, err := readConfigFile(f.configFile)
		if err != nil {
			return data, err
		}
		data.Config = config
	}
	return data, nil
}

// apiVersionRE is what --api-versions accepts: GROUP/VERSION, GROUP/VERSION/KIND, VERSION or
// VERSION/KIND (the core group).
var apiVersionRE = regexp.MustCompile(`^([a-z0-9]([a-z0-9.-]*[a-z0-9])?/)?v[0-9]+((alpha|beta)[0-9]+)?(/[A-Za-z][A-Za-z0-9]*)?$`)

// addAPIVersions gives the environment the API versions of --api-versions, over Helm's
// built-in set.
func (f *templateDataFlags) addAPIVersions(data *manifests.TemplateData) error {
	if len(f.apiVersions) == 0 {
		return nil
	}
	for _, v := range f.apiVersions {
		if !apiVersionRE.MatchString(v) {
			return fmt.Errorf("--api-versions %q: want GROUP/VERSION or GROUP/VERSION/KIND (v1 or v1/KIND for the core group), for example monitoring.coreos.com/v1/ServiceMonitor", v)
		}
	}
	env := manifests.Environment{}
	if data.Environment != nil {
		env = *data.Environment
	}
	env.APIVersions = manifests.DefaultAPIVersionsWith(f.apiVersions)
	data.Environment = &env
	return nil
}

// readConfigFile reads a YAML (or JSON) object of config values.
func readConfigFile(p string) (map[string]any, error) {
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", p, err)
	}
	var config map[string]any
	if err := utiljson.Unmarshal(j, &config); err != nil {
		return nil, fmt.Errorf("--config %s: want a YAML object: %w", p, err)
	}
	return config, nil
}
