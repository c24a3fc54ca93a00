package deploy

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
)

// applierUser is the ServiceAccount Packages apply as when they name none
// (deploy/rbac/package_applier.yaml, the Deployment's --default-service-account).
const applierUser = "system:serviceaccount:convoy-system:convoy-package-applier"

// TestPackageApplierReadsNoSecret asks the API server, with deploy/ applied, what the
// ServiceAccount a package applies as may do in an HCP namespace: the namespaced kinds of an
// add-on, and never a Secret, a cluster-scoped binding, nor the rights to escalate or bind.
func TestPackageApplierReadsNoSecret(t *testing.T) {
	env.Require(t)
	for name, tc := range map[string]struct {
		attrs authorizationv1.ResourceAttributes
		may   bool
	}{
		"create a ConfigMap":                {authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps"}, true},
		"patch a Deployment":                {authorizationv1.ResourceAttributes{Verb: "patch", Group: "apps", Resource: "deployments"}, true},
		"create a RoleBinding":              {authorizationv1.ResourceAttributes{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}, true},
		"read a Secret":                     {authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets"}, false},
		"list Secrets":                      {authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets"}, false},
		"create a ClusterRoleBinding":       {authorizationv1.ResourceAttributes{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}, false},
		"escalate a Role":                   {authorizationv1.ResourceAttributes{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "roles"}, false},
		"bind a ClusterRole":                {authorizationv1.ResourceAttributes{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, false},
		"impersonate a ServiceAccount":      {authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts"}, false},
		"create a CustomResourceDefinition": {authorizationv1.ResourceAttributes{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			attrs := tc.attrs
			if attrs.Resource != "clusterrolebindings" && attrs.Resource != "clusterroles" && attrs.Resource != "customresourcedefinitions" {
				attrs.Namespace = "clusters-tenant"
			}
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: applierUser, ResourceAttributes: &attrs}}
			g.Expect(env.Client.Create(context.Background(), review)).To(Succeed())
			g.Expect(review.Status.Allowed).To(Equal(tc.may), "%+v: %s", attrs, review.Status.Reason)
		})
	}
}
