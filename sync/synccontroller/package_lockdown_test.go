package synccontroller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/kubetest"
)

// lockdownPackage is a package that binds a powerful ClusterRole in its namespace, as a
// tenant who wants to read every Secret of an HCP namespace would write it.
func lockdownPackage(clusterRole string) map[string]string {
	return map[string]string{
		"pkg/manifest.yaml": manifest("deploy"),
		"pkg/objects.yaml": cmYAML("deploy", "", "settings", "1") + `---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: grab, annotations: {convoy.dev/phase: deploy}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ` + clusterRole + `}
subjects: [{kind: ServiceAccount, name: default}]
`,
	}
}

// TestPackageServiceAccountLocksDownManagementObjects: with spec.serviceAccountName, the
// engine applies as that ServiceAccount, so a RoleBinding to a ClusterRole the ServiceAccount
// does not hold is refused by the API server, while the same Package without it binds the role
// with the controller's own rights.
func TestPackageServiceAccountLocksDownManagementObjects(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	powerful := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "powerful-" + fleet.NameSuffix()},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}}}}
	g.Expect(env.Client.Create(ctx, powerful)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, powerful) })

	t.Run("locked down", func(t *testing.T) {
		g := NewWithT(t)
		ns := fleet.NewNamespaceIn(t, env.Client)
		tenantServiceAccount(g, ns, "deployer")
		repo := newGitSource(t, ns)
		_, err := repo.Commit("main", "grab", lockdownPackage(powerful.Name))
		g.Expect(err).NotTo(HaveOccurred())
		key := newPackage(t, ns, "locked", "pkg", func(p *convoyv1alpha1.Package) { p.Spec.ServiceAccountName = "deployer" })
		g.Eventually(func(g Gomega) {
			stalled := conditionOf(getPackage(g, key).Status.Conditions, convoyv1alpha1.StalledCondition)
			g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(stalled.Reason).To(Equal(convoyv1alpha1.ApplyFailedReason))
			g.Expect(stalled.Message).To(And(ContainSubstring("system:serviceaccount:"+ns+":deployer"), ContainSubstring("forbidden")))
		}).Should(Succeed())
		g.Expect(kubetest.Exists(g, env.Client, kubetest.Object("rbac.authorization.k8s.io/v1", "RoleBinding", ns, "grab", nil))).To(BeFalse())
	})

	t.Run("the ServiceAccount's rights suffice for the rest", func(t *testing.T) {
		g := NewWithT(t)
		ns := fleet.NewNamespaceIn(t, env.Client)
		tenantServiceAccount(g, ns, "deployer")
		repo := newGitSource(t, ns)
		c, err := repo.Commit("main", "settings", map[string]string{
			"pkg/manifest.yaml": manifest("deploy"), "pkg/objects.yaml": cmYAML("deploy", "", "settings", "1")})
		g.Expect(err).NotTo(HaveOccurred())
		key := newPackage(t, ns, "locked", "pkg", func(p *convoyv1alpha1.Package) { p.Spec.ServiceAccountName = "deployer" })
		expectAvailableAt(g, key, c)
		g.Expect(env.Client.Delete(ctx, getPackage(g, key))).To(Succeed())
		expectGone(g, key, 20*time.Second)
		g.Expect(kubetest.Exists(g, env.Client, kubetest.ConfigMap(ns, "settings", nil))).To(BeFalse(), "torn down as the ServiceAccount")
	})

	t.Run("without it the controller's own rights apply", func(t *testing.T) {
		g := NewWithT(t)
		ns := fleet.NewNamespaceIn(t, env.Client)
		repo := newGitSource(t, ns)
		c, err := repo.Commit("main", "grab", lockdownPackage(powerful.Name))
		g.Expect(err).NotTo(HaveOccurred())
		key := newPackage(t, ns, "open", "pkg")
		expectAvailableAt(g, key, c)
		g.Expect(kubetest.Exists(g, env.Client, kubetest.Object("rbac.authorization.k8s.io/v1", "RoleBinding", ns, "grab", nil))).To(BeTrue())
	})
}

// tenantServiceAccount creates a ServiceAccount that may manage ConfigMaps and RoleBindings
// of ns, and nothing else.
func tenantServiceAccount(g Gomega, ns, name string) {
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: []string{"*"}},
	}}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}}})).To(Succeed())
}

func TestServiceAccountFor(t *testing.T) {
	g := NewWithT(t)
	at := func(ns, name string) []string { return []string{ns, name} }
	for _, tc := range []struct {
		own, fallback string
		want          []string
	}{
		{"own", "fallback", at("tenant", "own")},
		{"own", "convoy-system/applier", at("tenant", "own")},
		{"", "fallback", at("tenant", "fallback")},
		{"", "convoy-system/applier", at("convoy-system", "applier")},
		{"", "", at("tenant", "")},
	} {
		ns, name := serviceAccountFor("tenant", tc.own, tc.fallback)
		g.Expect(at(ns, name)).To(Equal(tc.want), "%q, %q", tc.own, tc.fallback)
	}
}
