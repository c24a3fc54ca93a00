package checks

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestHTTPCheckPostsThePartition(t *testing.T) {
	g := NewWithT(t)
	hook := startServer(t, answerWith(204, ""))
	ev, err := evaluate(t, &HTTPCheck{URL: hook.URL + "/gate?x=1"}, Input{Data: partitionData()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ev).To(Equal(Evaluation{Outcome: Success, Value: "HTTP 204", Message: "POST " + hook.URL + "/gate?x=1 answered 204 No Content"}))
	req := hook.last()
	g.Expect(req.Method).To(Equal(http.MethodPost))
	g.Expect(req.ContentType).To(Equal("application/json"))
	var got map[string]any
	g.Expect(json.Unmarshal(req.Body, &got)).To(Succeed())
	g.Expect(got).To(Equal(map[string]any{
		"hostedClusterPackage": "addon", "partition": "canary", "revision": "addon-7d9f", "commit": "0123abcd",
		"hostedClusters": []any{
			map[string]any{"name": "hc-1", "namespace": "clusters", "labels": map[string]any{"tier": "canary"}},
			map[string]any{"name": "hc-2", "namespace": "clusters", "labels": map[string]any{"tier": "canary"}},
		},
	}))
}

func TestHTTPCheckStatuses(t *testing.T) {
	cases := []struct {
		name       string
		code       int
		body       string
		want       Outcome
		messageHas string
	}{
		{"200", 200, "ok", Success, "answered 200 OK"},
		{"500 with a sample of the body", 500, "database\nis down" + strings.Repeat("!", 1000), Failure, "answered 500 Internal Server Error: database is down!!!"},
		{"404", 404, "", Failure, "answered 404 Not Found"},
		{"a binary body", 400, "\x00\x01bad", Failure, "\uFFFD\uFFFDbad"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			hook := startServer(t, answerWith(tc.code, tc.body))
			ev, err := evaluate(t, &HTTPCheck{URL: hook.URL}, Input{Data: partitionData()})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ev.Outcome).To(Equal(tc.want))
			g.Expect(ev.Message).To(ContainSubstring(tc.messageHas))
			g.Expect(len(ev.Message)).To(BeNumerically("<=", len(hook.URL)+64+MaxSampleBytes))
		})
	}
}

func TestHTTPCheckHostileEndpoints(t *testing.T) {
	t.Run("never answers: inconclusive at the timeout", func(t *testing.T) {
		g := NewWithT(t)
		stop := make(chan struct{})
		hook := startServer(t, neverAnswer(stop))
		t.Cleanup(func() { close(stop) })
		start := time.Now()
		ev, err := evaluate(t, &HTTPCheck{URL: hook.URL, Timeout: 300 * time.Millisecond}, Input{Data: partitionData()})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		g.Expect(ev.Outcome).To(Equal(Inconclusive))
		g.Expect(ev.Message).To(ContainSubstring("no answer before the timeout"))
	})
	t.Run("stalls after a 200's headers: inconclusive at the timeout", func(t *testing.T) {
		g := NewWithT(t)
		stop := make(chan struct{})
		hook := startServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			_, _ = w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
			neverAnswer(stop)(w, r)
		})
		t.Cleanup(func() { close(stop) })
		ev, err := evaluate(t, &HTTPCheck{URL: hook.URL, Timeout: 300 * time.Millisecond}, Input{Data: partitionData()})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Outcome).To(Equal(Inconclusive))
		g.Expect(ev.Message).To(ContainSubstring("answered 200 OK but its body broke off: no answer before the timeout"))
	})
	t.Run("answers 1 GiB: read 64 KiB at most", func(t *testing.T) {
		g := NewWithT(t)
		chunk := []byte(strings.Repeat("x", 1<<20))
		hook := startServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			for i := 0; i < 1024 && r.Context().Err() == nil; i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		ev, err := evaluate(t, &HTTPCheck{URL: hook.URL}, Input{Data: partitionData()})
		runtime.ReadMemStats(&after)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		g.Expect(ev.Outcome).To(Equal(Failure))
		g.Expect(ev.Message).To(HaveSuffix(": " + strings.Repeat("x", MaxSampleBytes) + "…"))
		g.Expect(after.TotalAlloc-before.TotalAlloc).To(BeNumerically("<", 16<<20), "allocations while reading")
	})
	t.Run("redirects to another host: fails naming it", func(t *testing.T) {
		g := NewWithT(t)
		hook := startServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://attacker.example:8443/steal", http.StatusTemporaryRedirect)
		})
		ev, err := evaluate(t, &HTTPCheck{URL: hook.URL}, Input{Data: partitionData()})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Outcome).To(Equal(Failure))
		g.Expect(ev.Value).To(Equal("HTTP 307"))
		g.Expect(ev.Message).To(ContainSubstring("a redirect to the host attacker.example:8443; redirects are not followed"))
		g.Expect(hook.count()).To(Equal(1))
	})
}

func TestHTTPCheckTLS(t *testing.T) {
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) }))
	t.Cleanup(hook.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	t.Run("verified with the CA of the credentials", func(t *testing.T) {
		g := NewWithT(t)
		ev, err := evaluate(t, &HTTPCheck{URL: hook.URL}, Input{Data: partitionData(), Credentials: &Credentials{CA: ca}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Outcome).To(Equal(Success), ev.Message)
	})
	t.Run("refused without it", func(t *testing.T) {
		g := NewWithT(t)
		ev, err := evaluate(t, &HTTPCheck{URL: hook.URL}, Input{Data: partitionData()})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Outcome).To(Equal(Inconclusive))
		g.Expect(ev.Message).To(ContainSubstring("certificate signed by unknown authority"))
	})
	t.Run("a CA that holds no certificate", func(t *testing.T) {
		g := NewWithT(t)
		creds := &Credentials{CA: []byte("not a certificate")}
		g.Expect(creds.Validate()).To(MatchError("ca.crt holds no PEM certificate"))
		ev, err := evaluate(t, &HTTPCheck{URL: hook.URL}, Input{Data: partitionData(), Credentials: creds})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ev.Outcome).To(Equal(Inconclusive))
		g.Expect(ev.Message).To(ContainSubstring("holds no PEM certificate"))
	})
}

func TestHTTPCheckSpecErrors(t *testing.T) {
	cases := []struct {
		name, want string
		spec       HTTPCheck
	}{
		{"a relative URL", `http.url must be an absolute http or https URL`, HTTPCheck{URL: "/gate"}},
		{"another scheme", `has the scheme "file"`, HTTPCheck{URL: "file:///etc/passwd"}},
		{"credentials in the URL", "holds user information", HTTPCheck{URL: "https://user:hunter2@hook.example/"}},
		{"a timeout over the bound", "http.timeoutSeconds must be at most 1m0s", HTTPCheck{URL: "https://hook.example/", Timeout: 2 * time.Minute}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := tc.spec
			_, err := Compile(&spec)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
		})
	}
}
