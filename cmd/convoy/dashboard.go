package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/convoy-gitops/convoy/cmd/convoy/dashboard"
)

// dashboardOptions are the flags of `convoy dashboard`.
type dashboardOptions struct {
	kubeconfig string
	addr       string
}

func newDashboardCmd() *cobra.Command {
	opts := dashboardOptions{}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a read-only web dashboard of the fleet's rollouts",
		Long: "dashboard serves, with your kubeconfig, a read-only web page of every " +
			"HostedClusterPackage: the fleet, the rollout of one as a grid of partitions × clusters " +
			"with its budget and timeline, and each Package's phases, objects and events. It reads " +
			"the management cluster through informers and pushes changes to the page as server-sent " +
			"events. It binds to 127.0.0.1 unless told otherwise and opens no browser.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := restConfig(opts.kubeconfig)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDashboard(ctx, cfg, opts.addr, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "Kubeconfig of the management cluster (default: $KUBECONFIG, in-cluster, then ~/.kube/config).")
	fs.StringVar(&opts.addr, "addr", "127.0.0.1:8080", "Address to serve the dashboard on; port 0 picks a free one.")
	return cmd
}

// runDashboard serves the dashboard on addr until ctx is done, printing its URL to out once
// the cache has synced.
func runDashboard(ctx context.Context, cfg *rest.Config, addr string, out io.Writer) error {
	srv, err := dashboard.New(cfg, dashboard.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	handler := srv.Handler()
	if isLoopback(ln.Addr()) {
		handler = dashboard.LoopbackHosts(handler)
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	fmt.Fprintf(out, "convoy dashboard: http://%s/ (Ctrl-C to stop)\n", ln.Addr())
	go func() {
		<-ctx.Done()
		shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = hs.Shutdown(shutdown)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// isLoopback reports whether addr is a loopback address.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
