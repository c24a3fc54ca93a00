package hosted

import (
	"errors"
	"fmt"
	"sort"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Flags of `convoy controller` that relax KubeconfigPolicy, named in refusals.
const (
	// InsecureKubeconfigExecFlag allows exec and auth-provider credential plugins.
	InsecureKubeconfigExecFlag = "--insecure-kubeconfig-exec"
	// InsecureKubeconfigTLSFlag allows insecure-skip-tls-verify.
	InsecureKubeconfigTLSFlag = "--insecure-kubeconfig-tls"
	// InsecureKubeconfigFilesFlag allows references to files of the controller's filesystem.
	InsecureKubeconfigFilesFlag = "--insecure-kubeconfig-files"
	// InsecureKubeconfigProxyFlag allows proxy-url.
	InsecureKubeconfigProxyFlag = "--insecure-kubeconfig-proxy"
)

// ErrKubeconfigRefused is wrapped by every KubeconfigRefusedError.
var ErrKubeconfigRefused = errors.New("kubeconfig refused")

// KubeconfigPolicy says which parts of a kubeconfig Secret the controller honours beyond plain
// data (server, certificate and key data, token, basic credentials). A kubeconfig is data
// written by whoever may write Secrets in an HCP namespace; what it names is reached with the
// controller's own process: a command it runs, a file it reads (its ServiceAccount token), a
// proxy it sends the hosted cluster's credentials through. The zero value refuses all of it.
type KubeconfigPolicy struct {
	// AllowExec honours exec and auth-provider credential plugins (--insecure-kubeconfig-exec).
	AllowExec bool
	// AllowInsecureTLS honours insecure-skip-tls-verify (--insecure-kubeconfig-tls).
	AllowInsecureTLS bool
	// AllowFiles honours tokenFile, client-certificate, client-key and certificate-authority
	// file paths (--insecure-kubeconfig-files).
	AllowFiles bool
	// AllowProxy honours proxy-url (--insecure-kubeconfig-proxy).
	AllowProxy bool
}

// KubeconfigRefusedError names the field of a kubeconfig that the policy refuses.
type KubeconfigRefusedError struct {
	// Field is the kubeconfig field, e.g. `users[admin].exec`.
	Field string
	// Rule says why it is refused.
	Rule string
	// Flag is the controller flag that would allow it.
	Flag string
}

// Error implements error.
func (e *KubeconfigRefusedError) Error() string {
	return fmt.Sprintf("%s is refused: %s (allowed only with the controller flag %s)", e.Field, e.Rule, e.Flag)
}

// Unwrap makes errors.Is(err, ErrKubeconfigRefused) true.
func (e *KubeconfigRefusedError) Unwrap() error { return ErrKubeconfigRefused }

// Check returns the first field of cfg the policy refuses, in a stable order (clusters, then
// users, each by name), or nil.
func (p KubeconfigPolicy) Check(cfg *clientcmdapi.Config) error {
	for _, name := range sortedKeys(cfg.Clusters) {
		if err := p.checkCluster(name, cfg.Clusters[name]); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(cfg.AuthInfos) {
		if err := p.checkUser(name, cfg.AuthInfos[name]); err != nil {
			return err
		}
	}
	return nil
}

// checkCluster checks one clusters[] entry.
func (p KubeconfigPolicy) checkCluster(name string, c *clientcmdapi.Cluster) error {
	field := func(f string) string { return fmt.Sprintf("clusters[%s].%s", name, f) }
	switch {
	case c == nil:
		return nil
	case c.InsecureSkipTLSVerify && !p.AllowInsecureTLS:
		return &KubeconfigRefusedError{Field: field("insecure-skip-tls-verify"),
			Rule: "the hosted cluster's credentials would be sent to any server", Flag: InsecureKubeconfigTLSFlag}
	case c.CertificateAuthority != "" && !p.AllowFiles:
		return fileRefused(field("certificate-authority"))
	case c.ProxyURL != "" && !p.AllowProxy:
		return &KubeconfigRefusedError{Field: field("proxy-url"),
			Rule: "the hosted cluster's credentials would go through a proxy the Secret chooses", Flag: InsecureKubeconfigProxyFlag}
	}
	return nil
}

// checkUser checks one users[] entry.
func (p KubeconfigPolicy) checkUser(name string, u *clientcmdapi.AuthInfo) error {
	field := func(f string) string { return fmt.Sprintf("users[%s].%s", name, f) }
	switch {
	case u == nil:
		return nil
	case u.Exec != nil && !p.AllowExec:
		return &KubeconfigRefusedError{Field: field("exec"),
			Rule: "it runs a command in the controller", Flag: InsecureKubeconfigExecFlag}
	case u.AuthProvider != nil && !p.AllowExec:
		return &KubeconfigRefusedError{Field: field("auth-provider"),
			Rule: "it runs a credential plugin in the controller", Flag: InsecureKubeconfigExecFlag}
	case u.TokenFile != "" && !p.AllowFiles:
		return fileRefused(field("tokenFile"))
	case u.ClientCertificate != "" && !p.AllowFiles:
		return fileRefused(field("client-certificate"))
	case u.ClientKey != "" && !p.AllowFiles:
		return fileRefused(field("client-key"))
	}
	return nil
}

// fileRefused refuses a reference to a file of the controller's filesystem.
func fileRefused(field string) error {
	return &KubeconfigRefusedError{Field: field,
		Rule: "it reads a file of the controller (such as its ServiceAccount token); put the content in the *-data field", Flag: InsecureKubeconfigFilesFlag}
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
