package sourcecontroller

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// TestWebhookServerDropsSlowBodies sends headers and then trickles the body: the server gives
// up on the request after its read timeout instead of holding the connection.
func TestWebhookServerDropsSlowBodies(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	_, conn := startTrickled(t, &WebhookReceiver{Client: k8sClient, SecretReader: k8sClient, ReadTimeout: time.Second})
	defer conn.Close()

	start := time.Now()
	g.Expect(conn.SetReadDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
	_, err := io.ReadAll(conn)
	g.Expect(err).NotTo(HaveOccurred(), "the server closed the connection")
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
}

// TestWebhookServerBoundsTheCallsUnderWay holds the one slot of a receiver with a trickled
// body: another call is answered 503 at once, without being read, and is served once the slot
// is free again.
func TestWebhookServerBoundsTheCallsUnderWay(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	recv := &WebhookReceiver{Client: k8sClient, SecretReader: k8sClient, ReadTimeout: 15 * time.Second, MaxInFlight: 1}
	addr, slow := startTrickled(t, recv)
	g.Eventually(recv.callsInFlight).Should(Equal(1), "the trickled call is being read")

	call := func() int {
		resp, err := http.Post("http://"+addr+"/hooks/ns/name", "application/json", strings.NewReader("{}"))
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		return resp.StatusCode
	}
	g.Expect(call()).To(Equal(http.StatusServiceUnavailable), "the trickled call holds the only slot")
	g.Expect(slow.Close()).To(Succeed())
	g.Eventually(call).Should(Equal(http.StatusUnauthorized), "the slot is free again: the call is read and refused")
}

// startTrickled starts recv on a free port until the test ends, and opens a connection that
// sent the headers of a call and the first byte of its 1,000-byte body. It returns the address
// and the connection.
func startTrickled(t *testing.T, recv *WebhookReceiver) (string, net.Conn) {
	g := NewWithT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	recv.Addr = ln.Addr().String()
	g.Expect(ln.Close()).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = recv.Start(ctx) }()
	var conn net.Conn
	g.Eventually(func() error { conn, err = net.Dial("tcp", recv.Addr); return err }).Should(Succeed())
	_, err = io.WriteString(conn, "POST /hooks/ns/name HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nx")
	g.Expect(err).NotTo(HaveOccurred())
	return recv.Addr, conn
}

// FuzzWebhookCall feeds arbitrary paths, signature headers and bodies to the parsing and
// authentication of webhook calls: nothing panics, only the path of the one known source can
// authenticate, and only with its token. Run:
// go test ./sources/sourcecontroller -short -run '^$' -fuzz FuzzWebhookCall -fuzztime 20s.
func FuzzWebhookCall(f *testing.F) {
	token := []byte("hook-token")
	known := types.NamespacedName{Namespace: "ns", Name: "gs"}
	body := []byte(`{"ref":"refs/heads/main"}`)
	f.Add("/hooks/ns/gs", GitHubSignatureHeader, sha256Header(body, "hook-token"), body)
	f.Add("/hooks/ns/gs", GitLabTokenHeader, "hook-token", body)
	f.Add("/hooks/ns/gs", GiteaSignatureHeader, hex.EncodeToString(Sign(body, token)), body)
	f.Add("/hooks/ns/gs", BitbucketServerSignatureHeader, sha256Header(body, "hook-token"), body)
	f.Add("/hooks/ns/gs/x", SignatureHeader, "sha256=zz", []byte{})
	f.Add("/hooks//", SignatureHeader, "sha256=", []byte("\x00"))
	f.Fuzz(func(t *testing.T, path, header, value string, body []byte) {
		h := http.Header{}
		h.Set(header, value)
		nn, ok := parseHookPath(path)
		var tok []byte
		if ok && nn == known {
			tok = token
		}
		if !authenticated(h, body, tok) {
			return
		}
		if tok == nil {
			t.Fatalf("call to %q authenticated without a token", path)
		}
		if h.Get(GitLabTokenHeader) != string(token) && !validHMAC(value, body, token) && !validBareHMAC(value, body, token) {
			t.Fatalf("call authenticated without the token: %s: %q", header, value)
		}
	})
}
