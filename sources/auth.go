package sources

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
)

// Keys of a GitSource credentials Secret.
const (
	// UsernameKey and PasswordKey hold HTTP basic credentials.
	UsernameKey = "username"
	// PasswordKey is the HTTP basic password, or the passphrase of an encrypted SSH identity.
	PasswordKey = "password"
	// BearerTokenKey holds an HTTP bearer token.
	BearerTokenKey = "bearerToken"
	// CAKey holds PEM certificates to trust for HTTPS.
	CAKey = "ca.crt"
	// IdentityKey holds an SSH private key.
	IdentityKey = "identity"
	// KnownHostsKey holds the known_hosts lines the SSH server's key must match; mandatory
	// for SSH.
	KnownHostsKey = "known_hosts"
)

// Auth holds the credentials of a remote. Its String method hides every secret so it can be
// logged; do not log its fields.
type Auth struct {
	// Username and Password are HTTP basic credentials.
	Username, Password string
	// BearerToken is an HTTP bearer token.
	BearerToken string
	// CABundle is a PEM bundle trusted in addition to the system roots.
	CABundle []byte
	// Identity is a PEM SSH private key; Password is its passphrase if it is encrypted.
	Identity []byte
	// KnownHosts is known_hosts content; the SSH server's key must match it.
	KnownHosts []byte
}

// String describes which credentials are set, never their values.
func (a *Auth) String() string {
	if a == nil {
		return "none"
	}
	var kinds []string
	if a.Username != "" {
		kinds = append(kinds, "basic")
	}
	if a.BearerToken != "" {
		kinds = append(kinds, "bearer")
	}
	if len(a.CABundle) > 0 {
		kinds = append(kinds, "ca")
	}
	if len(a.Identity) > 0 {
		kinds = append(kinds, "ssh")
	}
	if len(kinds) == 0 {
		return "none"
	}
	return strings.Join(kinds, "+")
}

// GoString hides secrets from %#v.
func (a *Auth) GoString() string { return "sources.Auth{" + a.String() + "}" }

// Remote is a repository URL with its credentials.
type Remote struct {
	// URL of the repository.
	URL string
	// Auth are its credentials; nil means anonymous.
	Auth *Auth
	// Timeout bounds one on-demand fetch from it (the GitSource's spec.timeout); zero means
	// the store's FetchTimeout.
	Timeout time.Duration
}

// AuthFromSecret reads the credentials for url from a Secret. A missing or malformed key is an
// error that names the key; SSH URLs require identity and known_hosts.
func AuthFromSecret(secret *corev1.Secret, url string) (*Auth, error) {
	a := &Auth{
		Username:    string(secret.Data[UsernameKey]),
		Password:    string(secret.Data[PasswordKey]),
		BearerToken: string(secret.Data[BearerTokenKey]),
		CABundle:    secret.Data[CAKey],
		Identity:    secret.Data[IdentityKey],
		KnownHosts:  secret.Data[KnownHostsKey],
	}
	name := secret.Namespace + "/" + secret.Name
	if err := a.validate(IsSSHURL(url)); err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return a, nil
}

// validate checks that the keys needed for the protocol are there and parse.
func (a *Auth) validate(sshURL bool) error {
	if sshURL {
		return a.validateSSH()
	}
	switch {
	case a.Username != "" && a.Password == "":
		return fmt.Errorf("key %q is missing (required with %q)", PasswordKey, UsernameKey)
	case a.Password != "" && a.Username == "":
		return fmt.Errorf("key %q is missing (required with %q)", UsernameKey, PasswordKey)
	}
	if len(a.CABundle) > 0 && !x509.NewCertPool().AppendCertsFromPEM(a.CABundle) {
		return fmt.Errorf("key %q holds no PEM certificate", CAKey)
	}
	return nil
}

// validateSSH checks identity and known_hosts.
func (a *Auth) validateSSH() error {
	if len(a.Identity) == 0 {
		return fmt.Errorf("key %q is missing (required for SSH)", IdentityKey)
	}
	if len(a.KnownHosts) == 0 {
		return fmt.Errorf("key %q is missing (required for SSH)", KnownHostsKey)
	}
	if _, err := a.signer(); err != nil {
		return fmt.Errorf("key %q: %w", IdentityKey, err)
	}
	if _, err := parseKnownHostTypes(a.KnownHosts); err != nil {
		return fmt.Errorf("key %q: %w", KnownHostsKey, err)
	}
	return nil
}

// signer parses the SSH identity. Note: the parse error of x/crypto/ssh never quotes the key.
func (a *Auth) signer() (ssh.Signer, error) {
	if a.Password != "" {
		return ssh.ParsePrivateKeyWithPassphrase(a.Identity, []byte(a.Password))
	}
	return ssh.ParsePrivateKey(a.Identity)
}

// transportAuth returns the go-git auth method for url (nil for anonymous).
func (a *Auth) transportAuth(url string) (transport.AuthMethod, error) {
	if IsSSHURL(url) {
		if a == nil {
			return nil, fmt.Errorf("an SSH URL needs spec.secretRef with keys %q and %q", IdentityKey, KnownHostsKey)
		}
		return a.sshAuth(url)
	}
	switch {
	case a == nil:
		return nil, nil
	case a.BearerToken != "":
		return &githttp.TokenAuth{Token: a.BearerToken}, nil
	case a.Username != "":
		return &githttp.BasicAuth{Username: a.Username, Password: a.Password}, nil
	}
	return nil, nil
}

// caBundle returns the CA bundle, or nil.
func (a *Auth) caBundle() []byte {
	if a == nil {
		return nil
	}
	return a.CABundle
}

// sshAuth builds public key auth that verifies the host key against KnownHosts.
func (a *Auth) sshAuth(url string) (transport.AuthMethod, error) {
	if err := a.validateSSH(); err != nil {
		return nil, err
	}
	signer, _ := a.signer()
	callback, err := knownHostsCallback(a.KnownHosts)
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", KnownHostsKey, err)
	}
	algos, _ := parseKnownHostTypes(a.KnownHosts)
	user := "git"
	if ep, err := transport.NewEndpoint(url); err == nil && ep.User != "" {
		user = ep.User
	}
	pk := &gitssh.PublicKeys{User: user, Signer: signer}
	pk.HostKeyCallback = callback
	return &sshKeyAuth{PublicKeys: pk, hostKeyAlgorithms: algos}, nil
}

// sshKeyAuth pins the host key algorithms to those of known_hosts, so that the server offers
// the key we can verify.
type sshKeyAuth struct {
	*gitssh.PublicKeys
	hostKeyAlgorithms []string
}

// ClientConfig implements gitssh.AuthMethod.
func (a *sshKeyAuth) ClientConfig() (*ssh.ClientConfig, error) {
	cfg, err := a.PublicKeys.ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.HostKeyAlgorithms = a.hostKeyAlgorithms
	return cfg, nil
}

// knownHostsCallback verifies host keys against known_hosts content.
// Note: x/crypto's knownhosts only reads files; the content is written to a private temporary
// file that is removed as soon as it is parsed.
func knownHostsCallback(content []byte) (ssh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "convoy-known-hosts-*")
	if err != nil {
		return nil, fmt.Errorf("writing known_hosts: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(content); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing known_hosts: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("writing known_hosts: %w", err)
	}
	cb, err := knownhosts.New(f.Name())
	if err != nil {
		return nil, err
	}
	return func(host string, remote net.Addr, key ssh.PublicKey) error {
		if err := cb(host, remote, key); err != nil {
			var ke *knownhosts.KeyError
			if errors.As(err, &ke) && len(ke.Want) == 0 {
				return fmt.Errorf("host key of %s is not in known_hosts", host)
			}
			return fmt.Errorf("host key of %s does not match known_hosts: %w", host, err)
		}
		return nil
	}, nil
}

// parseKnownHostTypes parses known_hosts content and returns the host key algorithms it
// allows.
func parseKnownHostTypes(content []byte) ([]string, error) {
	var algos []string
	rest := content
	for {
		_, _, key, _, next, err := ssh.ParseKnownHosts(rest)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parsing known_hosts: %w", err)
		}
		rest = next
		for _, a := range hostKeyAlgorithms(key.Type()) {
			if !slices.Contains(algos, a) {
				algos = append(algos, a)
			}
		}
	}
	if len(algos) == 0 {
		return nil, errors.New("no host key in known_hosts")
	}
	return algos, nil
}

// hostKeyAlgorithms returns the signature algorithms usable with a key type.
func hostKeyAlgorithms(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

// IsSSHURL reports whether url uses SSH (ssh:// or scp-like user@host:path).
func IsSSHURL(url string) bool {
	if strings.HasPrefix(url, "ssh://") {
		return true
	}
	return !strings.Contains(url, "://") && strings.Contains(url, "@") && strings.Contains(url, ":")
}
