package checks

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// Keys of the Secret a check's secretRef names.
const (
	// TokenKey holds a bearer token.
	TokenKey = "token"
	// UsernameKey holds the user of basic authentication.
	UsernameKey = "username"
	// PasswordKey holds the password of basic authentication.
	PasswordKey = "password"
	// CAKey holds PEM certificates trusted besides the system's roots.
	CAKey = "ca.crt"
)

// CredentialsFromSecret reads credentials from the data of a Secret: token, or username and
// password, and optionally ca.crt. The token, username and password lose surrounding white
// space (a file written by an editor ends with a line break). An error names keys, never a
// value.
func CredentialsFromSecret(data map[string][]byte) (*Credentials, error) {
	c := &Credentials{
		Token:    strings.TrimSpace(string(data[TokenKey])),
		Username: strings.TrimSpace(string(data[UsernameKey])),
		Password: strings.TrimSpace(string(data[PasswordKey])),
		CA:       data[CAKey],
	}
	switch {
	case c.Token != "" && (c.Username != "" || c.Password != ""):
		return nil, errors.New("the Secret holds both token and username/password: keep one")
	case c.Token == "" && c.Username == "" && c.Password == "" && len(c.CA) == 0:
		return nil, errors.New("the Secret holds none of the keys token, username and password, ca.crt")
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate reports credentials that cannot work: a username without a password or the
// reverse, a CA that holds no certificate. An error names keys, never a value.
func (c *Credentials) Validate() error {
	if c == nil {
		return nil
	}
	if c.Token == "" && (c.Username == "") != (c.Password == "") {
		return errors.New("username and password go together: the Secret holds one of them only")
	}
	if len(c.CA) > 0 && !x509.NewCertPool().AppendCertsFromPEM(c.CA) {
		return errors.New("ca.crt holds no PEM certificate")
	}
	return nil
}

// InsecureCredentials returns a *SpecError when c names credentials (a secretRef) and sends
// them to an http:// address while allowInsecureHTTP is false (--check-allow-insecure-http):
// the token or password would cross the network in clear. The controller asks before reading
// the Secret, so nothing is read nor sent.
func InsecureCredentials(c *convoyv1alpha1.RolloutCheck, allowInsecureHTTP bool) error {
	k, _ := kindOf(c)
	if k == nil || k.secretRef(c) == nil || allowInsecureHTTP {
		return nil
	}
	field, address := k.address(c)
	u, err := url.Parse(address)
	if err != nil {
		return nil // Compile refuses it, naming the field
	}
	if u.Scheme == "https" {
		return nil
	}
	return specError(field, "must be an https:// URL when secretRef names credentials (http:// only with the controller flag "+InsecureHTTPFlag+")",
		fmt.Errorf("is %s", redactURL(u)))
}
