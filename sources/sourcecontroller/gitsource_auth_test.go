package sourcecontroller

import (
	"testing"

	. "github.com/onsi/gomega"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/test/gittest"
)

func TestGitSourceAuth(t *testing.T) {
	env.Require(t)
	ns := newNamespace(t)
	srv, c, creds := gittest.NewAuthServer(t)
	key, wrongKey, unknownHost := creds.Key, creds.WrongKey, string(creds.UnknownHost)

	cases := []struct {
		name   string
		url    string
		secret map[string]string
		// reason is "" for success, else the reason of Ready=False.
		reason  string
		message string
		stalled bool
	}{
		{name: "http basic good", url: srv.HTTPURL("repo"), secret: map[string]string{"username": "user", "password": "s3cret"}},
		{name: "http basic bad", url: srv.HTTPURL("repo"), secret: map[string]string{"username": "user", "password": "wrong"},
			reason: convoyv1alpha1.AuthenticationFailedReason},
		{name: "ssh good key", url: srv.SSHURL("repo"), secret: map[string]string{"identity": string(key.PrivatePEM), "known_hosts": string(srv.KnownHosts())}},
		{name: "ssh wrong key", url: srv.SSHURL("repo"), secret: map[string]string{"identity": string(wrongKey.PrivatePEM), "known_hosts": string(srv.KnownHosts())},
			reason: convoyv1alpha1.AuthenticationFailedReason},
		{name: "ssh unknown host key", url: srv.SSHURL("repo"), secret: map[string]string{"identity": string(key.PrivatePEM), "known_hosts": unknownHost},
			reason: convoyv1alpha1.AuthenticationFailedReason, message: "known_hosts"},
		{name: "missing known_hosts key", url: srv.SSHURL("repo"), secret: map[string]string{"identity": string(key.PrivatePEM)},
			reason: convoyv1alpha1.InvalidSpecReason, message: `key "known_hosts" is missing`, stalled: true},
		{name: "missing password key", url: srv.HTTPURL("repo"), secret: map[string]string{"username": "user"},
			reason: convoyv1alpha1.InvalidSpecReason, message: `key "password" is missing`, stalled: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			secretName := "creds-" + string(rune('a'+i))
			data := map[string][]byte{}
			for k, v := range tc.secret {
				data[k] = []byte(v)
			}
			createSecret(t, ns, secretName, data)
			gs := createSource(t, ns, convoyv1alpha1.GitSourceSpec{URL: tc.url, Ref: convoyv1alpha1.GitRef{Branch: "main"},
				SecretRef: &convoyv1alpha1.LocalObjectReference{Name: secretName}})
			if tc.reason == "" {
				waitReady(t, gs, c)
				return
			}
			cond := convoyv1alpha1.FetchFailedCondition
			if tc.stalled {
				cond = convoyv1alpha1.StalledCondition
			}
			out := waitCondition(t, gs, cond, tc.reason)
			ready := pass.Get(out, convoyv1alpha1.ReadyCondition)
			g.Expect(ready.Status).To(BeEquivalentTo("False"))
			g.Expect(ready.Reason).To(Equal(tc.reason))
			g.Expect(ready.Message).To(ContainSubstring(tc.message))
			for _, c := range out.Status.Conditions {
				g.Expect(c.Message).NotTo(ContainSubstring("s3cret"))
				g.Expect(c.Message).NotTo(ContainSubstring("PRIVATE KEY"))
			}
			if tc.stalled {
				g.Expect(out.Status.ObservedGeneration).To(Equal(out.Generation))
				g.Expect(pass.Get(out, convoyv1alpha1.ReconcilingCondition)).To(BeNil())
			}
		})
	}
}

func TestGitSourceStalledOnMissingSecretRecoversWhenSecretAppears(t *testing.T) {
	env.Require(t)
	ns := newNamespace(t)
	srv, repo := gittest.NewServer(t)
	c := gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	srv.SetBasicAuth("user", "pw")
	gs := createSource(t, ns, convoyv1alpha1.GitSourceSpec{URL: srv.HTTPURL("repo"), Ref: convoyv1alpha1.GitRef{Branch: "main"},
		SecretRef: &convoyv1alpha1.LocalObjectReference{Name: "later"}})
	out := waitCondition(t, gs, convoyv1alpha1.StalledCondition, convoyv1alpha1.InvalidSpecReason)
	NewWithT(t).Expect(pass.Get(out, convoyv1alpha1.StalledCondition).Message).To(ContainSubstring("later"))
	createSecret(t, ns, "later", map[string][]byte{"username": []byte("user"), "password": []byte("pw")})
	waitReady(t, gs, c)
}

// TestGitSourceRefusesFileURLsWithoutTheFlag: file:// reads the controller's disk, other
// GitSources' repositories in its store included; the suite's reconciler does not allow it.
func TestGitSourceRefusesFileURLsWithoutTheFlag(t *testing.T) {
	env.Require(t)
	ns := newNamespace(t)
	srv, repo := gittest.NewServer(t)
	gittest.Commit(t, repo, "one", map[string]string{"f": "1"})
	gs := createSource(t, ns, convoyv1alpha1.GitSourceSpec{URL: srv.FileURL("repo"), Ref: convoyv1alpha1.GitRef{Branch: "main"}})
	out := waitCondition(t, gs, convoyv1alpha1.StalledCondition, convoyv1alpha1.InsecureURLRefusedReason)
	g := NewWithT(t)
	g.Expect(pass.Get(out, convoyv1alpha1.StalledCondition).Message).To(And(
		ContainSubstring("file://"), ContainSubstring("--allow-file-urls")))
	g.Expect(out.Status.Artifact).To(BeNil())
}
