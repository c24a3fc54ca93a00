package hosted

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/infrastructure/faultnet"
)

func TestCappedBodyReadsUpToItsLimit(t *testing.T) {
	read := func(body string, contentLength int64) (string, error) {
		return readCapped(4, body, contentLength, "application/json")
	}
	g := NewWithT(t)
	got, err := read("abcd", -1)
	g.Expect(err).NotTo(HaveOccurred(), "exactly the limit")
	g.Expect(got).To(Equal("abcd"))

	got, err = read("abcde", -1)
	var tl *ResponseTooLargeError
	g.Expect(errors.As(err, &tl)).To(BeTrue(), "one byte more: %v", err)
	g.Expect(got).To(BeEmpty(), "nothing of the read that passed the limit is returned")
	g.Expect(tl.Error()).To(Equal("https://h answered GET /api/v1/namespaces with more than 4 bytes, counting 64 for each JSON value (--hosted-max-response-bytes); the rest was not read"))

	got, err = read("abcdefgh", 8)
	g.Expect(errors.As(err, &tl)).To(BeTrue(), "announced too long: %v", err)
	g.Expect(got).To(BeEmpty(), "not a byte is read")

	huge := &cappedBody{ReadCloser: io.NopCloser(strings.NewReader("abc")), left: math.MaxInt64}
	b, err := io.ReadAll(huge)
	g.Expect(err).NotTo(HaveOccurred(), "the largest limit does not overflow")
	g.Expect(string(b)).To(Equal("abc"))

	patch := &ResponseTooLargeError{Host: "https://h", Method: http.MethodPatch, Path: "/api/v1/namespaces/a/configmaps/b", Limit: 4}
	g.Expect(patch.Error()).To(HaveSuffix("; the request itself may have taken effect"), "a write may have been carried out")
}

// readCapped reads body through a capped transport of limit, as sent with contentLength and
// contentType.
func readCapped(limit int64, body string, contentLength int64, contentType string) (string, error) {
	c := &capped{host: "https://h", limit: limit, next: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, ContentLength: contentLength, Header: http.Header{"Content-Type": {contentType}},
			Body: io.NopCloser(strings.NewReader(body))}, nil
	})}
	req, _ := http.NewRequest(http.MethodGet, "https://h/api/v1/namespaces", nil)
	resp, err := c.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestJSONValuesAreChargedWhatTheyCostDecoded: an answer of tiny arrays, which would decode to
// twenty times its size, is cut as soon as its values weigh the limit; a string's content and a
// protobuf answer are charged their bytes only.
func TestJSONValuesAreChargedWhatTheyCostDecoded(t *testing.T) {
	g := NewWithT(t)
	var tl *ResponseTooLargeError
	const limit = 1 << 20
	flood := "[" + strings.Repeat("[],", limit)
	got, err := readCapped(limit, flood, -1, "application/json")
	g.Expect(errors.As(err, &tl)).To(BeTrue(), "%v", err)
	g.Expect(len(got)).To(BeNumerically("<", limit/(2*jsonValueCost)+32<<10), "cut after about limit/(2×64) bytes of two values each 3 bytes")

	_, err = readCapped(limit, `{"data":{"k":"`+strings.Repeat(`[],\"`, 200<<10)+`"}}`, -1, "application/json")
	g.Expect(err).NotTo(HaveOccurred(), "inside a string, brackets and escaped quotes are bytes")
	_, err = readCapped(limit, flood, -1, "application/json; charset=utf-8")
	g.Expect(errors.As(err, &tl)).To(BeTrue(), "parameters do not change the base type")
	for _, other := range []string{"application/vnd.kubernetes.protobuf", "application/yaml", "", "application/cbor"} {
		got, err = readCapped(limit, strings.Repeat("x", limit/2), -1, other)
		g.Expect(errors.As(err, &tl)).To(BeTrue(), "%q: every byte is charged as a value", other)
		g.Expect(len(got)).To(BeNumerically("<", limit/jsonValueCost+32<<10), "%q", other)
	}
}

// TestHostedClientsAskForJSONOnly: an answer in JSON is what the cap can charge by its values.
func TestHostedClientsAskForJSONOnly(t *testing.T) {
	g := NewWithT(t)
	var asked []string
	c := &capped{host: "https://h", limit: 1 << 20, next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		asked = append(asked, r.Header.Get("Accept"))
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})}
	for _, accept := range []string{
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
		"application/vnd.kubernetes.protobuf",
		"application/json",
	} {
		req, _ := http.NewRequest(http.MethodGet, "https://h/api/v1/namespaces", nil)
		req.Header.Set("Accept", accept)
		_, err := c.RoundTrip(req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(req.Header.Get("Accept")).To(Equal(accept), "the caller's request is left as it is")
	}
	g.Expect(asked).To(Equal([]string{
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
		"application/json",
		"application/json",
	}))
}

// TestAnswerLongerThanTheLimitFailsAndTheClusterStaysReachable reads objects of a real API
// server around the limit.
func TestAnswerLongerThanTheLimitFailsAndTheClusterStaysReachable(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := fleet.NewNamespaceIn(t, blue.Client)
	for name, size := range map[string]int{"small": 100 << 10, "large": 300 << 10} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data: map[string]string{"blob": strings.Repeat("x", size)}}
		g.Expect(blue.Client.Create(ctx, cm)).To(Succeed())
	}
	secretNS, ref := kubeconfigFor(t, blue.Config.Host)
	clients := NewClients(env.Client, env.Client, Options{Scheme: env.Scheme, MaxResponseBytes: 256 << 10, UnreachableBackoff: time.Hour})
	c, err := clients.Client(ctx, secretNS, ref)
	g.Expect(err).NotTo(HaveOccurred())

	err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "large"}, &corev1.ConfigMap{})
	var tl *ResponseTooLargeError
	g.Expect(errors.As(err, &tl)).To(BeTrue(), "%v", err)
	g.Expect(tl.Path).To(Equal("/api/v1/namespaces/" + ns + "/configmaps/large"))
	g.Expect(tl.Limit).To(Equal(int64(256 << 10)))

	small := &corev1.ConfigMap{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "small"}, small)).To(Succeed(),
		"an answer too large is an answer: the circuit stays closed")
	g.Expect(small.Data["blob"]).To(HaveLen(100 << 10))

	meta := &metav1.PartialObjectMetadataList{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	g.Expect(c.List(ctx, meta, client.InNamespace(ns), client.Limit(1))).To(Succeed(),
		"the metadata client, asked for JSON only, still lists: what the engine's hosted lists do")
	g.Expect(meta.Items).To(HaveLen(1))
	g.Expect(meta.Items[0].ResourceVersion).NotTo(BeEmpty())
}

// TestFloodingServerIsReadOnlyUpToTheLimit points a client at a server whose gzip-compressed
// answer never ends: the client stops at the limit, decompressed, long before its timeout.
func TestFloodingServerIsReadOnlyUpToTheLimit(t *testing.T) {
	env.Require(t)
	g := NewWithT(t)
	srv := faultnet.NewFloodingServer()
	defer srv.Close()
	ns, ref := kubeconfigFor(t, srv.URL)
	clients := NewClients(env.Client, env.Client, Options{Scheme: env.Scheme, MaxResponseBytes: 1 << 20,
		Timeout: time.Minute, UnreachableBackoff: time.Hour})
	c, err := clients.Client(context.Background(), ns, ref)
	g.Expect(err).NotTo(HaveOccurred())

	took, err := timedList(c)
	var tl *ResponseTooLargeError
	g.Expect(errors.As(err, &tl)).To(BeTrue(), "%v", err)
	g.Expect(took).To(BeNumerically("<", 30*time.Second), "cut at the limit, not at the 1-minute timeout")
	requests := srv.Requests()
	_, err = timedList(c)
	g.Expect(errors.As(err, &tl)).To(BeTrue(), "the circuit stays closed: %v", err)
	g.Expect(srv.Requests()).To(Equal(requests+1), "the request was sent")
}
