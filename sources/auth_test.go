package sources

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
)

func TestAuthOverHTTPAndSSH(t *testing.T) {
	srv, _, creds := gittest.NewAuthServer(t)
	key, wrongKey, wrongHost := creds.Key, creds.WrongKey, creds.UnknownHost

	cases := []struct {
		name    string
		url     string
		auth    *Auth
		wantErr string
	}{
		{"basic good", srv.HTTPURL("repo"), &Auth{Username: "user", Password: "s3cret"}, ""},
		{"basic bad", srv.HTTPURL("repo"), &Auth{Username: "user", Password: "wrong"}, "authentication"},
		{"basic missing", srv.HTTPURL("repo"), nil, "authentication required"},
		{"ssh good key", srv.SSHURL("repo"), &Auth{Identity: key.PrivatePEM, KnownHosts: srv.KnownHosts()}, ""},
		{"ssh wrong key", srv.SSHURL("repo"), &Auth{Identity: wrongKey.PrivatePEM, KnownHosts: srv.KnownHosts()}, "unable to authenticate"},
		{"ssh unknown host key", srv.SSHURL("repo"), &Auth{Identity: key.PrivatePEM, KnownHosts: wrongHost}, "known_hosts"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := newStore(t, Limits{})
			_, err := s.Poll(testCtx(t), KeyFor("ns", "src"), Remote{URL: tc.url, Auth: tc.auth}, convoyv1alpha1.GitRef{Branch: "main"})
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
		})
	}
}

func TestAuthFromSecretNamesMissingKeys(t *testing.T) {
	key, err := gitserver.NewClientKey()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	cases := []struct {
		name    string
		url     string
		data    map[string]string
		wantErr string
	}{
		{"basic", "https://h/r.git", map[string]string{"username": "u", "password": "p"}, ""},
		{"bearer", "https://h/r.git", map[string]string{"bearerToken": "t"}, ""},
		{"password missing", "https://h/r.git", map[string]string{"username": "u"}, `key "password" is missing`},
		{"username missing", "https://h/r.git", map[string]string{"password": "p"}, `key "username" is missing`},
		{"bad ca", "https://h/r.git", map[string]string{"ca.crt": "nope"}, `key "ca.crt"`},
		{"ssh identity missing", "ssh://git@h/r.git", map[string]string{"known_hosts": "h ssh-ed25519 AAAA"}, `key "identity" is missing`},
		{"ssh known_hosts missing", "git@h:r.git", map[string]string{"identity": string(key.PrivatePEM)}, `key "known_hosts" is missing`},
		{"ssh identity malformed", "ssh://git@h/r.git", map[string]string{"identity": "x", "known_hosts": "y"}, `key "identity"`},
		{"ssh known_hosts malformed", "ssh://git@h/r.git", map[string]string{"identity": string(key.PrivatePEM), "known_hosts": "y"}, `key "known_hosts"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{}}
			for k, v := range tc.data {
				sec.Data[k] = []byte(v)
			}
			a, err := AuthFromSecret(sec, tc.url)
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(a.String()).NotTo(ContainSubstring("p"))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			g.Expect(err.Error()).To(ContainSubstring("ns/creds"))
		})
	}
}
