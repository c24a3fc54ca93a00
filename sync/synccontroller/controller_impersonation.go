package synccontroller

import (
	"fmt"
	"sync"

	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The engine impersonates the ServiceAccount a Package names (tenant lockdown).
//
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate

// serviceAccountClients hands out uncached clients of the management cluster that impersonate
// a ServiceAccount, one per ServiceAccount, made on first use and kept. Safe for concurrent
// use.
type serviceAccountClients struct {
	config *rest.Config
	opts   client.Options

	mu     sync.Mutex
	byUser map[string]client.Client
}

// newServiceAccountClients returns clients built on config (the controller's own identity)
// with opts' scheme and REST mapper.
func newServiceAccountClients(config *rest.Config, opts client.Options) *serviceAccountClients {
	return &serviceAccountClients{config: config, opts: client.Options{Scheme: opts.Scheme, Mapper: opts.Mapper},
		byUser: map[string]client.Client{}}
}

// clientFor returns a client acting as the ServiceAccount name of namespace.
func (s *serviceAccountClients) clientFor(namespace, name string) (client.Client, error) {
	user := serviceaccount.MakeUsername(namespace, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.byUser[user]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(s.config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, s.opts)
	if err != nil {
		return nil, fmt.Errorf("building a client as %s: %w", user, err)
	}
	s.byUser[user] = c
	return c, nil
}

// serviceAccountFor returns the ServiceAccount the management side of an object is applied
// as: its own, else the controller's default; empty means the controller's own identity.
func serviceAccountFor(own, fallback string) string {
	if own != "" {
		return own
	}
	return fallback
}
