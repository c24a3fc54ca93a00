package rolloutcontroller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/dialpolicy"
	"github.com/convoy-gitops/convoy/rollout"
	"github.com/convoy-gitops/convoy/rollout/checks"
)

// CheckOptions say how the checks' requests travel.
type CheckOptions struct {
	// AllowInsecureHTTP lets a check send its Secret's credentials over http://
	// (--check-allow-insecure-http); without it such a check stalls with InvalidSpec.
	AllowInsecureHTTP bool
	// Network says which addresses checks may connect to (--allow-link-local-addresses).
	Network dialpolicy.Policy
}

// checkCredentials are the credentials read from one Secret, or why there are none.
type checkCredentials struct {
	creds *checks.Credentials
	// problem says why the Secret gives no credentials (missing, refused, a key missing,
	// unreadable); the evaluations of its checks are inconclusive with it as their message.
	problem string
}

// readCheckSecrets reads, once each, the Secrets the due checks of obj name, by namespace/name.
// A Secret that is missing, refused or holds no usable keys is a problem, never an absence of
// credentials: the check would otherwise ask anonymously and might pass.
func (r *HostedClusterPackageReconciler) readCheckSecrets(ctx context.Context, obj *convoyv1alpha1.HostedClusterPackage,
	due []rollout.DueCheck) map[types.NamespacedName]checkCredentials {
	out := map[types.NamespacedName]checkCredentials{}
	for i := range due {
		ref := checks.SecretRef(&due[i].Check)
		if ref == nil {
			continue
		}
		key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
		if _, ok := out[key]; !ok {
			out[key] = r.readCheckSecret(ctx, obj, key)
		}
	}
	return out
}

// readCheckSecret reads the credentials of the Secret key for obj's checks, when
// checkSecretRefusal allows it. Its problems name the Secret, the rule and its keys, never a
// value.
func (r *HostedClusterPackageReconciler) readCheckSecret(ctx context.Context, obj *convoyv1alpha1.HostedClusterPackage,
	key types.NamespacedName) checkCredentials {
	secret := &corev1.Secret{}
	err := r.secretReader().Get(ctx, key, secret)
	switch {
	case apierrors.IsNotFound(err):
		return checkCredentials{problem: fmt.Sprintf("Secret %s of the check's secretRef is not found", key)}
	case err != nil:
		return checkCredentials{problem: fmt.Sprintf("reading Secret %s of the check's secretRef: %s", key, apiErrorReason(err))}
	}
	if refusal := checkSecretRefusal(obj, secret); refusal != "" {
		return checkCredentials{problem: fmt.Sprintf("Secret %s of the check's secretRef is refused, and nothing was sent: %s", key, refusal)}
	}
	creds, err := checks.CredentialsFromSecret(secret.Data)
	if err != nil {
		return checkCredentials{problem: fmt.Sprintf("Secret %s of the check's secretRef: %v", key, err)}
	}
	return checkCredentials{creds: creds}
}

// checkSecretRefusal says why obj's checks may not use secret, or "" when they may. A check's
// Secret must be one whoever edits the rollout could name anyway:
//   - in the namespace of the rollout's GitSource, whose editors already choose where its
//     credentials go (as a GitSource's commit status token lives beside it), or opted in by
//     its own owner with the annotation convoy.dev/check-credentials listing the rollout's
//     name (or "*"). Without this rule, whoever may edit a cluster-scoped HostedClusterPackage
//     could send any Secret of the cluster (a service account token of kube-system, another
//     tenant's Git credentials) to an address of their choosing, with the controller's right
//     to read every Secret;
//   - of type Opaque: a service account token, a dockerconfigjson or a TLS Secret was made for
//     another reader, and a service account token Secret has a "token" key too.
func checkSecretRefusal(obj *convoyv1alpha1.HostedClusterPackage, secret *corev1.Secret) string {
	source := obj.Spec.Template.Spec.SourceRef.Namespace
	if secret.Namespace != source && !optedIn(secret, obj.Name) {
		return fmt.Sprintf("a check reads a Secret only in the namespace of the HostedClusterPackage's GitSource (%s), "+
			"or one whose annotation %s lists the HostedClusterPackage %s (or is \"*\")",
			source, convoyv1alpha1.CheckCredentialsAnnotation, obj.Name)
	}
	if secret.Type != "" && secret.Type != corev1.SecretTypeOpaque {
		return fmt.Sprintf("it is of type %s; a check reads only Secrets of type %s", secret.Type, corev1.SecretTypeOpaque)
	}
	return ""
}

// optedIn reports whether secret's annotation convoy.dev/check-credentials lists the
// HostedClusterPackage name, or is "*".
func optedIn(secret *corev1.Secret, name string) bool {
	value, ok := secret.Annotations[convoyv1alpha1.CheckCredentialsAnnotation]
	if !ok {
		return false
	}
	allowed := strings.Split(value, ",")
	for i := range allowed {
		allowed[i] = strings.TrimSpace(allowed[i])
	}
	return slices.Contains(allowed, "*") || slices.Contains(allowed, name)
}

// apiErrorReason says why the API server refused a read, without echoing more than its
// reason and status.
func apiErrorReason(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Sprintf("%s (%d)", status.Status().Reason, status.Status().Code)
	}
	return err.Error()
}
