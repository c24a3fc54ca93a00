package main

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/bench"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// partitionLabel orders the hosted clusters of the rollout.
const partitionLabel = "hypershift.openshift.io/risk-group"

// settleTimeout bounds each wait for the controller.
const settleTimeout = 2 * time.Minute

// TestReleasedControllerRunsAsItsServiceAccount runs `convoy controller`, built as the release
// builds it, as a process whose kubeconfig holds only a token of the convoy-controller
// ServiceAccount of the install file: no client certificate, no impersonation, no other right.
// With that, it reconciles a Package, rolls a package with hosted-cluster phases out to three
// hosted clusters partition by partition, and reports a kind its ClusterRole lacks.
func TestReleasedControllerRunsAsItsServiceAccount(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	hosted, err := env.AddHostedClusters(ctx,
		fleet.HostedClusterInput{Name: "early-1", Labels: map[string]string{partitionLabel: "early"}},
		fleet.HostedClusterInput{Name: "normal-2", Labels: map[string]string{partitionLabel: "normal"}},
		fleet.HostedClusterInput{Name: "late-3", Labels: map[string]string{partitionLabel: "late"}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		for _, hc := range hosted {
			_ = hc.StopAPIServer()
		}
	})
	ctrl := startControllerAs(t, serviceAccountKubeconfig(t))

	t.Run("serves its version on /metrics", func(t *testing.T) {
		raw, err := ctrl.Metrics(ctx)
		g := NewWithT(t)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(raw).To(MatchRegexp(`convoy_build_info\{[^}]*version="` + releaseTag + `"[^}]*\} 1`))
	})
	srv, repo := gittest.NewServer(t)
	commit := gittest.Commit(t, repo, "add the packages", packageFiles(t))
	g.Expect(env.Client.Create(ctx, &convoyv1alpha1.GitSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: "addons"},
		Spec: convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL("repo"), Ref: convoyv1alpha1.GitRef{Branch: "main"},
			Interval:   &metav1.Duration{Duration: time.Second},
			AccessFrom: &convoyv1alpha1.AccessFrom{NamespaceSelectors: []metav1.LabelSelector{{}}}},
	})).To(Succeed())

	t.Run("reconciles a Package", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.NewNamespace(t)
		key := createPackage(ctx, g, ns, "config")
		g.Eventually(packageCondition(ctx, key, convoyv1alpha1.ReadyCondition), settleTimeout).Should(
			HaveField("Status", metav1.ConditionTrue))
		pkg := &convoyv1alpha1.Package{}
		g.Expect(env.Client.Get(ctx, key, pkg)).To(Succeed())
		g.Expect(pkg.Status.Revision).To(Equal(commit))
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, &corev1.ConfigMap{})).To(Succeed())
	})
	t.Run("rolls out to hosted clusters, hosted-cluster phases included", func(t *testing.T) {
		rollOutToHostedClusters(t, hosted)
	})
	t.Run("says which kind its ClusterRole lacks", func(t *testing.T) {
		g := NewWithT(t)
		key := createPackage(ctx, g, env.NewNamespace(t), "quota")
		g.Eventually(packageCondition(ctx, key, convoyv1alpha1.StalledCondition), settleTimeout).Should(And(
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Reason", convoyv1alpha1.ApplyFailedReason),
			HaveField("Message", And(
				ContainSubstring(`resourcequotas "limits" is forbidden`),
				MatchRegexp(`User "system:serviceaccount:convoy-system:convoy-package-applier" cannot (get|patch) resource "resourcequotas" in API group "" in the namespace "%s"`, key.Namespace)))))
	})
	t.Run("refuses a RoleBinding beyond the rights of the ServiceAccount it applies as", func(t *testing.T) {
		g := NewWithT(t)
		key := createPackage(ctx, g, env.NewNamespace(t), "escalate")
		g.Eventually(packageCondition(ctx, key, convoyv1alpha1.StalledCondition), settleTimeout).Should(And(
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Reason", convoyv1alpha1.ApplyFailedReason),
			HaveField("Message", And(ContainSubstring(`rolebindings.rbac.authorization.k8s.io "grab-secrets" is forbidden`),
				ContainSubstring(`user "system:serviceaccount:convoy-system:convoy-package-applier"`),
				ContainSubstring("attempting to grant RBAC permissions not currently held")))))
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: "grab-secrets"}, &rbacv1.RoleBinding{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing was bound")
	})
}

// rollOutToHostedClusters rolls the example package extra-component out to the hosted
// clusters with a HostedClusterPackage, one partition after the other, and checks what its
// hosted-cluster phases created in each hosted cluster.
func rollOutToHostedClusters(t *testing.T, hosted []*fleet.HostedCluster) {
	g := NewWithT(t)
	ctx := context.Background()
	raw, err := os.ReadFile("../../examples/hostedclusterpackage.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	hcpkg := &convoyv1alpha1.HostedClusterPackage{}
	g.Expect(yaml.UnmarshalStrict(raw, hcpkg)).To(Succeed())
	widenApplier(ctx, g)
	g.Expect(env.Client.Create(ctx, hcpkg)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(hcpkg), hcpkg)).To(Succeed())
		g.Expect(hcpkg.Status.TotalPackages).To(BeEquivalentTo(len(hosted)))
		g.Expect(hcpkg.Status.ProgressedPackages).To(BeEquivalentTo(len(hosted)))
		g.Expect(apimeta.IsStatusConditionTrue(hcpkg.Status.Conditions, convoyv1alpha1.ReadyCondition)).To(BeTrue(),
			"%v", hcpkg.Status.Conditions)
	}, settleTimeout, time.Second).Should(Succeed())
	g.Expect(hcpkg.Status.Partitions).To(HaveLen(3))
	g.Expect(hcpkg.Status.Partitions).To(HaveEach(HaveField("State", convoyv1alpha1.PartitionDone)))
	for _, hc := range hosted {
		ns := &corev1.Namespace{}
		g.Expect(hc.Client.Get(ctx, client.ObjectKey{Name: "extra-component"}, ns)).To(Succeed(),
			"the rbac phase created the namespace in hosted cluster %s", hc.Name)
		g.Expect(ns.Labels).To(HaveKeyWithValue("app.kubernetes.io/part-of", "extra-component"))
	}
}

// widenApplier grants the ServiceAccount Packages apply as the one more right the example's
// Role hands its controller, reading the HCP namespace's service-network kubeconfig Secret, as
// docs/operations/installing.md shows: the API server refuses a Role that grants what its
// creator does not hold.
func widenApplier(ctx context.Context, g Gomega) {
	g.Expect(env.Client.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "extra-component-applier"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"},
			ResourceNames: []string{"service-network-admin-kubeconfig"}, Verbs: []string{"get"}}}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "extra-component-applier"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "extra-component-applier"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: controllerNamespace, Name: applierServiceAccount}}})).To(Succeed())
}

// serviceAccountKubeconfig requests a token of the controller's ServiceAccount and writes a
// kubeconfig holding only that token.
func serviceAccountKubeconfig(t *testing.T) string {
	g := NewWithT(t)
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	hour := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(controllerNamespace).CreateToken(context.Background(), serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := simfleet.KubeConfigFor(&rest.Config{Host: env.Config.Host, BearerToken: tr.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}, "convoy-controller")
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(path, raw, 0o600)).To(Succeed())
	return path
}

// startControllerAs builds convoy stamped with the release's version and runs `convoy
// controller` with the kubeconfig, leader election on in the install's namespace.
func startControllerAs(t *testing.T, kubeconfig string) *bench.Controller {
	g := NewWithT(t)
	dir := t.TempDir()
	binary := filepath.Join(dir, "convoy")
	out, err := exec.Command("go", "build", "-o", binary, "-ldflags",
		"-X github.com/convoy-gitops/convoy/internal/buildinfo.version="+releaseTag, "../../cmd/convoy").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	ctrl, err := bench.StartController(context.Background(), bench.ControllerInput{Binary: binary,
		Kubeconfig: kubeconfig, Dir: dir, Concurrency: 4, LeaseNamespace: controllerNamespace, Args: lockdownFlags(g)})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		_ = ctrl.Stop()
		if t.Failed() {
			log, _ := os.ReadFile(ctrl.LogPath())
			t.Logf("controller log:\n%s", log)
		}
	})
	return ctrl
}

// lockdownFlags returns the --default-service-account flag of the install's Deployment: the
// controller runs locked down, as installed.
func lockdownFlags(g Gomega) []string {
	for _, obj := range installed {
		if obj.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, d)).To(Succeed())
		for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
			if strings.HasPrefix(arg, "--default-service-account=") {
				return []string{arg}
			}
		}
	}
	g.Expect("--default-service-account").To(BeEmpty(), "the install's Deployment sets no default ServiceAccount")
	return nil
}

// packageFiles are the packages of the test repository: config (a ConfigMap), quota (a
// ResourceQuota, a kind convoy's ClusterRole lacks) and the example extra-component.
func packageFiles(t *testing.T) map[string]string {
	files := map[string]string{
		"config/manifest.yaml":   manifest("config"),
		"config/settings.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  annotations: {convoy.dev/phase: deploy}\ndata: {level: info}\n",
		"quota/manifest.yaml":    manifest("quota"),
		"quota/quota.yaml":       "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: limits\n  annotations: {convoy.dev/phase: deploy}\nspec:\n  hard: {pods: \"10\"}\n",
		"escalate/manifest.yaml": manifest("escalate"),
		"escalate/binding.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: grab-secrets\n" +
			"  annotations: {convoy.dev/phase: deploy}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: convoy-controller}\n" +
			"subjects:\n- {kind: ServiceAccount, name: default}\n",
	}
	root := "../../examples/packages/extra-component"
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		files["extra-component/"+filepath.ToSlash(rel)] = string(raw)
		return err
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return files
}

// manifest is a PackageManifest of one management phase, deploy.
func manifest(name string) string {
	return "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata:\n  name: " + name +
		"\nspec:\n  phases:\n  - name: deploy\n"
}

// createPackage creates a Package of ns applying path of the addons GitSource.
func createPackage(ctx context.Context, g Gomega, ns, path string) client.ObjectKey {
	pkg := &convoyv1alpha1.Package{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: path},
		Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: convoyv1alpha1.PackageTemplateSpec{
			SourceRef: convoyv1alpha1.SourceReference{Name: "addons", Namespace: controllerNamespace}, Path: path}},
	}
	g.Expect(env.Client.Create(ctx, pkg)).To(Succeed())
	return client.ObjectKeyFromObject(pkg)
}

// packageCondition returns a poll of the condition t of the Package key.
func packageCondition(ctx context.Context, key client.ObjectKey, t string) func() metav1.Condition {
	return func() metav1.Condition {
		pkg := &convoyv1alpha1.Package{}
		if err := env.Client.Get(ctx, key, pkg); err != nil {
			return metav1.Condition{Message: err.Error()}
		}
		if c := apimeta.FindStatusCondition(pkg.Status.Conditions, t); c != nil {
			return *c
		}
		return metav1.Condition{Message: "no " + t + " condition yet: " + strings.TrimSpace(pkg.Status.Revision)}
	}
}
