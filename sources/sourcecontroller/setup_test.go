package sourcecontroller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	"github.com/convoy-gitops/convoy/sources"
)

func TestOptionsBindFlags(t *testing.T) {
	g := NewWithT(t)
	var o Options
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	g.Expect(fs.Parse([]string{"--storage-path=/tmp/x", "--webhook-addr=", "--git-max-file-size=42"})).To(Succeed())
	g.Expect(o.StoragePath).To(Equal("/tmp/x"))
	g.Expect(o.WebhookAddr).To(BeEmpty())
	g.Expect(o.Limits.MaxFileSize).To(Equal(int64(42)))
	g.Expect(o.Limits.MaxFiles).To(Equal(sources.DefaultLimits().MaxFiles))
}

func TestWebhookReceiverStartsAndStops(t *testing.T) {
	g := NewWithT(t)
	w := &WebhookReceiver{Addr: "127.0.0.1:0"}
	g.Expect(w.NeedLeaderElection()).To(BeFalse())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Start(ctx) }()
	time.Sleep(100 * time.Millisecond)
	cancel()
	g.Eventually(done, "5s").Should(Receive(BeNil()))
}
