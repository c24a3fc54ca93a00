package hostile

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/bench"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/faultnet"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// Names every tenant of the run shares.
const (
	gitSourceName = "addons"
	packageName   = "pkg"
	// packagePath is the package directory of every tenant's repository.
	packagePath = "pkg"
	// kubeconfigSecret is the Secret a hosted tenant's Package reaches its hosted cluster with.
	kubeconfigSecret = "kc"
	// keptName is the ConfigMap of the good revision that must survive every hostile change.
	keptName = "kept"
	// controllerClusterRole is the controller's ClusterRole, from deploy/rbac/role.yaml.
	controllerClusterRole = "convoy-controller"
	// hostedName names the hosted cluster, and its cluster, user and context in kubeconfigs.
	hostedName = "hostile"
)

// progressBound is how long the healthy Package may take to reach a new commit.
const progressBound = 30 * time.Second

// run is one run of the corpus: the controller process, the Git server, the hosted cluster
// and the healthy tenant whose Package must keep progressing.
type run struct {
	ctx     context.Context
	c       client.Client
	ctrl    *bench.Controller
	pid     int
	git     *gitserver.Server
	hosted  *fleet.HostedCluster
	healthy *tenant
	// marker is the file an exec plugin of a hostile kubeconfig would create.
	marker string
	// flood is a server whose gzip-compressed answer never ends.
	flood *faultnet.FloodingServer
	// healthyRevision counts the healthy tenant's commits.
	healthyRevision int
	// webhookAddr is the controller's webhook receiver.
	webhookAddr string
	// chartHop is a chart repository that redirects every request to chartElsewhere, another
	// port of this machine, which must get no request.
	chartHop, chartElsewhere *countingServer
}

// tenant is a namespace with its own repository, GitSource and Package, Ready at good.
type tenant struct {
	ns   string
	repo *gitserver.Repo
	pkg  client.ObjectKey
	// hosted says the good revision also has a hosted-cluster phase.
	hosted bool
	good   string
}

// hosted is the suite's hosted cluster, started by the first run and shared by the next: the
// suite's fleet stops it.
var hosted struct {
	once sync.Once
	hc   *fleet.HostedCluster
	err  error
}

// sharedHostedCluster starts the hosted cluster hostedName once for the package's tests.
func sharedHostedCluster(ctx context.Context) (*fleet.HostedCluster, error) {
	hosted.once.Do(func() { hosted.hc, hosted.err = env.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: hostedName}) })
	return hosted.hc, hosted.err
}

// startRun builds bin/convoy, starts the hosted cluster, the Git server and the controller
// process, and brings the healthy tenant to Ready.
func startRun(t *testing.T) *run {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	r := &run{ctx: ctx, c: env.Client, marker: filepath.Join(t.TempDir(), "exec-ran")}
	var err error
	r.hosted, err = sharedHostedCluster(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	r.flood = faultnet.NewFloodingServer()
	t.Cleanup(r.flood.Close)
	r.git, err = gitserver.New(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(r.git.Close)
	_, err = r.git.StartHTTP()
	g.Expect(err).NotTo(HaveOccurred())
	createControllerClusterRole(ctx, g, r.c)

	r.startChartServers(t)
	r.webhookAddr = freeAddress(t)
	r.ctrl = startController(t, buildConvoy(t), r.webhookAddr)
	r.pid = r.ctrl.PID()
	r.healthy = r.newTenant(t, hostileCase{})
	return r
}

// buildConvoy returns the convoy binary of the tests (fleet.ConvoyBinary).
func buildConvoy(t *testing.T) string {
	t.Helper()
	convoy, err := fleet.ConvoyBinary(t.TempDir())
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return convoy
}

// The render budget of the run: smaller than the defaults (10 s, 256 MiB), so that a runaway
// template is stopped sooner and the run stays short; real packages render far within it.
const (
	renderCPULimit    = 2 * time.Second
	renderMemoryLimit = 128 << 20
)

// startController runs `convoy controller` against the management cluster with its defaults
// (no file:// URLs, no clear-text credentials, no insecure kubeconfigs, no link-local address,
// no chart redirect to another host) but a smaller render budget, and its webhook receiver on
// webhookAddr.
func startController(t *testing.T, binary, webhookAddr string) *bench.Controller {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	kubeconfig, err := simfleet.KubeConfigFor(env.Config, "management")
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "kubeconfig")
	g.Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
	ctrl, err := bench.StartController(context.Background(), bench.ControllerInput{
		Binary: binary, Kubeconfig: path, Dir: dir, Concurrency: 4,
		Args: []string{"--render-cpu-limit", renderCPULimit.String(), "--render-memory-limit", strconv.Itoa(renderMemoryLimit),
			"--webhook-addr", webhookAddr}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = ctrl.Stop() })
	return ctrl
}

// createControllerClusterRole creates the ClusterRole of deploy/rbac/role.yaml, which a
// hostile package binds to a tenant.
func createControllerClusterRole(ctx context.Context, g Gomega, c client.Client) {
	root, err := simfleet.RepositoryRoot()
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := os.ReadFile(filepath.Join(root, "deploy", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	g.Expect(yaml.Unmarshal(raw, role)).To(Succeed())
	g.Expect(role.Name).To(Equal(controllerClusterRole))
	if err := c.Create(ctx, role); !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// newTenant creates a namespace with what tc needs (an HCP and a kubeconfig Secret, a tenant
// ServiceAccount), a repository holding the good revision, its GitSource and its Package, and
// waits until the Package is Ready and Available at the good revision.
func (r *run) newTenant(t *testing.T, tc hostileCase) *tenant {
	t.Helper()
	g := NewWithT(t)
	tn := &tenant{ns: fleet.NewNamespaceIn(t, r.c), hosted: tc.hosted}
	if tc.hosted {
		r.makeHCPNamespace(g, tn.ns)
	}
	if tc.serviceAccount != "" {
		createTenantServiceAccount(r.ctx, g, r.c, tn.ns, tc.serviceAccount)
	}
	var err error
	tn.repo, err = r.git.CreateRepo(tn.ns)
	g.Expect(err).NotTo(HaveOccurred())
	tn.good, err = tn.repo.Commit("main", "good", goodFiles(tn))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.c.Create(r.ctx, &convoyv1alpha1.GitSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: gitSourceName},
		Spec: convoyv1alpha1.GitSourceSpec{URL: r.git.HTTPURL(tn.ns), Ref: convoyv1alpha1.GitRef{Branch: "main"},
			Interval: &metav1.Duration{Duration: time.Second}},
	})).To(Succeed())
	pkg := &convoyv1alpha1.Package{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: packageName},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: convoyv1alpha1.PackageTemplateSpec{
			SourceRef: convoyv1alpha1.SourceReference{Name: gitSourceName}, Path: packagePath,
			ServiceAccountName: tc.serviceAccount}},
	}
	if tc.hosted {
		pkg.Spec.HostedCluster = &convoyv1alpha1.HostedClusterTarget{
			KubeconfigSecretRef: &convoyv1alpha1.SecretKeyReference{Name: kubeconfigSecret}}
	}
	g.Expect(r.c.Create(r.ctx, pkg)).To(Succeed())
	tn.pkg = client.ObjectKeyFromObject(pkg)
	r.expectAvailableAt(g, tn.pkg, tn.good, progressBound)
	return tn
}

// makeHCPNamespace makes ns look like an HCP namespace of the hosted cluster (a copy of its
// HostedControlPlane) and writes the hosted cluster's kubeconfig into the kc Secret.
func (r *run) makeHCPNamespace(g Gomega, ns string) {
	hcps := &hyperv1.HostedControlPlaneList{}
	g.Expect(r.c.List(r.ctx, hcps, client.InNamespace(r.hosted.HCPNamespace))).To(Succeed())
	g.Expect(hcps.Items).NotTo(BeEmpty())
	hcp := hcps.Items[0].DeepCopy()
	hcp.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: hcp.Name, Annotations: hcp.Annotations}
	g.Expect(r.c.Create(r.ctx, hcp)).To(Succeed())
	kubeconfig, err := simfleet.KubeConfigFor(r.hosted.Config, hostedName)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.c.Create(r.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kubeconfigSecret},
		Data: map[string][]byte{convoyv1alpha1.KubeconfigSecretKey: kubeconfig}})).To(Succeed())
}

// createTenantServiceAccount creates a ServiceAccount that may manage the ConfigMaps and
// RoleBindings of ns, and nothing else.
func createTenantServiceAccount(ctx context.Context, g Gomega, c client.Client, ns, name string) {
	g.Expect(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	g.Expect(c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}},
		{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}, Verbs: []string{"*"}},
	}})).To(Succeed())
	g.Expect(c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}})).To(Succeed())
}

// goodFiles is the good revision of a tenant: the kept ConfigMap in its namespace and, for a
// hosted tenant, one in the hosted cluster.
func goodFiles(tn *tenant) map[string]string {
	manifest := "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: tenant}\nspec:\n  phases:\n  - {name: deploy}\n"
	files := map[string]string{
		packagePath + "/kept.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + keptName +
			", annotations: {convoy.dev/phase: deploy}}\ndata: {v: good}\n",
	}
	if tn.hosted {
		manifest += "  - {name: inside, class: hosted-cluster}\n"
		files[packagePath+"/hosted.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + hostedKeptName(tn) +
			", namespace: default, annotations: {convoy.dev/phase: inside}}\ndata: {v: good}\n"
	}
	files[packagePath+"/manifest.yaml"] = manifest
	return files
}

// hostedKeptName is the name of a hosted tenant's ConfigMap in the hosted cluster.
func hostedKeptName(tn *tenant) string { return keptName + "-" + tn.ns }

// expectAvailableAt waits until the Package is Ready and Available at revision.
func (r *run) expectAvailableAt(g Gomega, key client.ObjectKey, revision string, within time.Duration) {
	g.Eventually(func(g Gomega) {
		pkg := &convoyv1alpha1.Package{}
		g.Expect(r.c.Get(r.ctx, key, pkg)).To(Succeed())
		g.Expect(pkg.Status.Revision).To(Equal(revision))
		for _, condType := range []string{convoyv1alpha1.ReadyCondition, convoyv1alpha1.AvailableCondition} {
			g.Expect(conditionOf(pkg.Status.Conditions, condType).Status).To(Equal(metav1.ConditionTrue), condType)
		}
	}).WithTimeout(within).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// conditionOf returns the condition of type condType, or a zero one.
func conditionOf(conds []metav1.Condition, condType string) metav1.Condition {
	for _, c := range conds {
		if c.Type == condType {
			return c
		}
	}
	return metav1.Condition{}
}
