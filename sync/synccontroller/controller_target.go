package synccontroller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/sync/engine"
	"github.com/convoy-gitops/convoy/sync/hosted"
)

// reconcileHostedCluster discovers the HostedCluster of the namespace into s.hostedCluster;
// a namespace without one is not an error here (reconcileTarget decides whether one is needed).
func (c *Common) reconcileHostedCluster(ctx context.Context, s *scope) error {
	hc, err := c.discoverer.Discover(ctx, s.obj.GetNamespace())
	if errors.Is(err, hosted.ErrNoHostedCluster) {
		return nil
	}
	if err != nil {
		return err
	}
	s.hostedCluster = hc
	return nil
}

// reconcileTarget sets s.target; a revision with hosted-cluster phases, or an inventory with
// hosted objects, gets a client of the hosted cluster. A missing hosted cluster stalls the
// pass; missing credentials make it wait.
func (c *Common) reconcileTarget(ctx context.Context, s *scope) error {
	mgmt, err := c.managementClient(s)
	if err != nil {
		return err
	}
	s.target = &engine.Target{Namespace: s.obj.GetNamespace(), Name: s.obj.GetName(), Kind: ownerKind(s.obj), Management: mgmt,
		Shard: c.Shard, AdoptFrom: s.adoptFrom}
	if !s.revision.NeedsHostedCluster() && !hasHosted(s.status.Inventory) {
		return nil
	}
	if s.hostedCluster == nil {
		return pass.Stallf(convoyv1alpha1.HostedClusterNotFoundReason,
			"the revision has hosted-cluster phases but namespace %s belongs to no hosted cluster (no HostedControlPlane)",
			s.obj.GetNamespace())
	}
	cl, err := c.Hosted.Client(ctx, s.obj.GetNamespace(), s.kubeconfigRef)
	if err != nil {
		err = hostedClientError(err)
		recordTargetFailure(s, err)
		return err
	}
	s.target.Hosted = cl
	return nil
}

// managementClient returns the client management objects are applied, pruned and torn down
// with: one impersonating the ServiceAccount of the object (or the controller's default one),
// else the controller's own.
func (c *Common) managementClient(s *scope) (client.Client, error) {
	ns, sa := serviceAccountFor(s.obj.GetNamespace(), s.serviceAccount, c.DefaultServiceAccount)
	if sa == "" {
		return c.Direct, nil
	}
	return c.impersonating.clientFor(ns, sa)
}

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
// serviceAccountFor returns the namespace and name of the ServiceAccount the management objects
// of an object in namespace are applied as: its own (own, in namespace), else the
// --default-service-account fallback, which is "<namespace>/<name>" for one ServiceAccount of
// the whole controller (deploy/ names convoy-system/convoy-package-applier, bound to the
// least-privileged ClusterRole convoy-package-applier) or a bare name for that ServiceAccount of
// each object's namespace; an empty name means the controller's own rights.
func serviceAccountFor(namespace, own, fallback string) (string, string) {
	if own != "" {
		return namespace, own
	}
	if ns, name, ok := strings.Cut(fallback, "/"); ok {
		return ns, name
	}
	return namespace, fallback
}

// hostedClientError classifies an error of the hosted client cache: a kubeconfig the policy
// refuses stalls the object until its Secret changes (the Secret watch requeues it).
func hostedClientError(err error) error {
	if errors.Is(err, hosted.ErrKubeconfigRefused) {
		return pass.Stallf(convoyv1alpha1.KubeconfigRefusedReason, "cannot reach the hosted cluster: %w", err)
	}
	if errors.Is(err, hosted.ErrNoKubeconfig) {
		return pass.Waitf(convoyv1alpha1.HostedClusterUnreachableReason, engine.UnreachableInterval,
			"cannot reach the hosted cluster: %w", err)
	}
	return err
}

// recordTargetFailure marks the object not Available when its hosted cluster cannot be
// reached: what it applied there cannot be checked.
func recordTargetFailure(s *scope, err error) {
	pass.MarkFalse(s.obj, convoyv1alpha1.AvailableCondition, pass.ReasonOf(err), "%s", err.Error())
}
