package checks

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The credentials of these tests: none may appear in any output.
const (
	secretToken    = "tok-3f9a7c51e2d84b06"
	secretPassword = "pw-a8c1e7f5b3d90264"
)

// echoAuthorization answers code with a body that repeats the request's Authorization header
// and a Location that carries the token as user information, as a hostile or careless server
// would.
func echoAuthorization(code int, format string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		token := strings.TrimPrefix(auth, "Bearer ")
		w.Header().Set("Location", "https://x:"+url.QueryEscape(token)+"@other.example/?t="+url.QueryEscape(token))
		w.WriteHeader(code)
		_, _ = w.Write([]byte(strings.ReplaceAll(format, "AUTH", auth)))
	}
}

func TestCredentialsNeverAppearInAnOutput(t *testing.T) {
	creds := map[string]*Credentials{
		"token": {Token: secretToken},
		"basic": {Username: "convoy", Password: secretPassword},
	}
	leaks := []string{secretToken, secretPassword, url.QueryEscape(secretToken),
		base64.StdEncoding.EncodeToString([]byte("convoy:" + secretPassword))}
	servers := []struct {
		name   string
		answer http.HandlerFunc
		spec   func(address string) Spec
	}{
		{"prometheus error", echoAuthorization(400, `{"status":"error","errorType":"bad_data","error":"denied for AUTH"}`), errorRatioCheck},
		{"prometheus non-API answer", echoAuthorization(401, `unauthorized: AUTH`), errorRatioCheck},
		{"prometheus value", echoAuthorization(200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"auth":"AUTH"},"value":[1,"1"]}]}}`), errorRatioCheck},
		{"alertmanager", echoAuthorization(500, `AUTH`), partitionAlertsCheck},
		{"alertmanager alert", echoAuthorization(200, `[{"labels":{"alertname":"AUTH","severity":"critical","hosted_cluster":"hc-1"},"startsAt":"2030-01-01T00:00:00Z","status":{"state":"active"}}]`), partitionAlertsCheck},
		{"http body", echoAuthorization(500, `you sent AUTH`), func(a string) Spec { return &HTTPCheck{URL: a} }},
		{"http body cut in the middle of the token", echoAuthorization(500, strings.Repeat("x", MaxSampleBytes-20)+"AUTH"),
			func(a string) Spec { return &HTTPCheck{URL: a} }},
		{"http redirect", echoAuthorization(302, ``), func(a string) Spec { return &HTTPCheck{URL: a} }},
	}
	for _, srv := range servers {
		for credName, cred := range creds {
			t.Run(srv.name+" with "+credName, func(t *testing.T) {
				g := NewWithT(t)
				s := startServer(t, srv.answer)
				ev, err := evaluate(t, srv.spec(s.URL), Input{Data: partitionData(), Since: partitionStart, Credentials: cred,
					AllowInsecureHTTP: true})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(s.last().Authorization).NotTo(BeEmpty(), "the credentials were sent")
				for _, leak := range append(leaks, secretToken[:12], secretPassword[:12]) {
					g.Expect(ev.Value).NotTo(ContainSubstring(leak))
					g.Expect(ev.Message).NotTo(ContainSubstring(leak))
				}
			})
		}
	}
}

func TestTransportErrorsLoseTheURL(t *testing.T) {
	g := NewWithT(t)
	err := transportError(t.Context(), &url.Error{Op: "Post", URL: "https://x:" + secretToken + "@hook.example/", Err: errors.New("connection reset")})
	g.Expect(err).To(MatchError("connection reset"))
	u, err := url.Parse("https://x:" + secretToken + "@hook.example/p?q=1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(redactURL(u)).To(Equal("https://hook.example/p?q=1"))
}

func TestCredentialsFromSecret(t *testing.T) {
	cases := []struct {
		name string
		data map[string][]byte
		want *Credentials
		err  string
	}{
		{name: "a token with a line break", data: map[string][]byte{"token": []byte(secretToken + "\n")}, want: &Credentials{Token: secretToken}},
		{name: "basic", data: map[string][]byte{"username": []byte("convoy"), "password": []byte(secretPassword)},
			want: &Credentials{Username: "convoy", Password: secretPassword}},
		{name: "both", data: map[string][]byte{"token": []byte(secretToken), "password": []byte(secretPassword)}, err: "holds both token and username/password"},
		{name: "a password alone", data: map[string][]byte{"password": []byte(secretPassword)}, err: "username and password go together"},
		{name: "nothing", data: map[string][]byte{"tok": []byte(secretToken)}, err: "holds none of the keys"},
		{name: "a CA that is not PEM", data: map[string][]byte{"ca.crt": []byte(secretToken)}, err: "ca.crt holds no PEM certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := CredentialsFromSecret(tc.data)
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				g.Expect(err.Error()).NotTo(Or(ContainSubstring(secretToken), ContainSubstring(secretPassword)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
