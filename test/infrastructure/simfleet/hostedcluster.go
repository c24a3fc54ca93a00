package simfleet

import (
	"context"
	"errors"
	"fmt"
	"sync"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/infrastructure/controlplane"
)

// DefaultHostedClusterNamespace is where HostedClusters go when the input names none.
const DefaultHostedClusterNamespace = "clusters"

// simulatedFinalizer keeps a HostedCluster in the deleting state, as HyperShift's finalizer does
// while it tears a hosted cluster down.
const simulatedFinalizer = "hypershift.openshift.io/finalizer"

// HostedClusterInput describes one simulated hosted cluster.
type HostedClusterInput struct {
	// Namespace of the HostedCluster; default "clusters".
	Namespace string
	// Name of the HostedCluster.
	Name string
	// Labels of the HostedCluster, e.g. a partition label.
	Labels map[string]string
	// Unavailable starts the HostedCluster with Available=False.
	Unavailable bool
	// WithoutAPIServer creates the HostedCluster, HCP namespace and HostedControlPlane but no
	// hosted API server and no kubeconfig Secret (for fleets of a thousand in benchmarks).
	WithoutAPIServer bool
}

// HostedCluster is one simulated hosted cluster.
type HostedCluster struct {
	// Namespace and Name of the HostedCluster object.
	Namespace, Name string
	// HCPNamespace is its hosted control plane namespace on the management cluster.
	HCPNamespace string
	// Config reaches the hosted API server as an administrator; nil WithoutAPIServer.
	Config *rest.Config
	// Client is an uncached client of the hosted API server; nil WithoutAPIServer.
	Client client.Client

	mu           sync.Mutex
	controlPlane *controlplane.ControlPlane
}

// AddHostedClusters starts the hosted clusters concurrently.
func (f *Fleet) AddHostedClusters(ctx context.Context, inputs ...HostedClusterInput) ([]*HostedCluster, error) {
	out := make([]*HostedCluster, len(inputs))
	errs := make([]error, len(inputs))
	var wg sync.WaitGroup
	for i, in := range inputs {
		wg.Go(func() { out[i], errs[i] = f.AddHostedCluster(ctx, in) })
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// AddHostedCluster starts a hosted API server (unless WithoutAPIServer) and creates on the
// management cluster what HyperShift would: the HostedCluster with its Available condition, the
// HCP namespace, the HostedControlPlane and the service-network-admin-kubeconfig Secret.
func (f *Fleet) AddHostedCluster(ctx context.Context, in HostedClusterInput) (*HostedCluster, error) {
	if in.Namespace == "" {
		in.Namespace = DefaultHostedClusterNamespace
	}
	hc := &HostedCluster{Namespace: in.Namespace, Name: in.Name,
		HCPNamespace: convoyv1alpha1.HostedControlPlaneNamespace(in.Namespace, in.Name)}
	if !in.WithoutAPIServer {
		if err := f.startAPIServer(ctx, hc); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	f.clusters[hc.key()] = hc
	f.mu.Unlock()
	if err := f.createManagementObjects(ctx, in, hc); err != nil {
		return nil, fmt.Errorf("hosted cluster %s: %w", hc.key(), err)
	}
	return hc, nil
}

func (hc *HostedCluster) key() string { return hc.Namespace + "/" + hc.Name }

func (f *Fleet) startAPIServer(ctx context.Context, hc *HostedCluster) error {
	cp, err := controlplane.Start(ctx, f.opts.controlPlaneOptions(nil))
	if err != nil {
		return fmt.Errorf("starting the API server of hosted cluster %s: %w", hc.key(), err)
	}
	cfg := cp.Config
	f.opts.tune(cfg)
	c, err := client.New(cfg, client.Options{Scheme: f.Scheme})
	if err != nil {
		_ = cp.Stop()
		return err
	}
	hc.controlPlane, hc.Config, hc.Client = cp, cfg, c
	return nil
}

// HCPNamespaceLabel is the label HyperShift puts on the namespaces of hosted control planes.
const HCPNamespaceLabel = "hypershift.openshift.io/hosted-control-plane"

func (f *Fleet) createManagementObjects(ctx context.Context, in HostedClusterInput, hc *HostedCluster) error {
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: in.Namespace}},
		{ObjectMeta: metav1.ObjectMeta{Name: hc.HCPNamespace, Labels: map[string]string{HCPNamespaceLabel: "true"}}},
	} {
		if err := createIfMissing(ctx, f.Client, ns); err != nil {
			return err
		}
	}
	if err := f.Client.Create(ctx, newHostedCluster(in)); err != nil {
		return fmt.Errorf("creating HostedCluster: %w", err)
	}
	if err := f.SetAvailable(ctx, hc, !in.Unavailable); err != nil {
		return err
	}
	if err := f.Client.Create(ctx, newHostedControlPlane(in, hc.HCPNamespace)); err != nil {
		return fmt.Errorf("creating HostedControlPlane: %w", err)
	}
	if hc.Config == nil {
		return nil
	}
	return f.WriteKubeconfigSecret(ctx, hc)
}

// WriteKubeconfigSecret creates or updates the service-network-admin-kubeconfig Secret of the
// hosted cluster; calling it again gives the Secret a new resourceVersion, as a certificate
// rotation would.
func (f *Fleet) WriteKubeconfigSecret(ctx context.Context, hc *HostedCluster) error {
	kubeconfig, err := KubeConfigFor(hc.Config, hc.Name)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hc.HCPNamespace, Name: convoyv1alpha1.KubeconfigSecretName}}
	err = f.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret)
	secret.Data = map[string][]byte{convoyv1alpha1.KubeconfigSecretKey: kubeconfig}
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Annotations["fleet.convoy.dev/rotated-at"] = metav1.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	switch {
	case apierrors.IsNotFound(err):
		return f.Client.Create(ctx, secret)
	case err != nil:
		return err
	default:
		return f.Client.Update(ctx, secret)
	}
}

// SetAvailable sets the HostedCluster's Available condition as HyperShift would.
func (f *Fleet) SetAvailable(ctx context.Context, hc *HostedCluster, available bool) error {
	obj := &hyperv1.HostedCluster{}
	if err := f.Client.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: hc.Name}, obj); err != nil {
		return err
	}
	apimeta.SetStatusCondition(&obj.Status.Conditions, availableCondition(available, obj.Generation))
	if err := f.Client.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("setting Available on HostedCluster %s: %w", hc.key(), err)
	}
	return nil
}

// SetLabels replaces the HostedCluster's labels.
func (f *Fleet) SetLabels(ctx context.Context, hc *HostedCluster, labels map[string]string) error {
	obj := &hyperv1.HostedCluster{}
	if err := f.Client.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: hc.Name}, obj); err != nil {
		return err
	}
	obj.Labels = labels
	return f.Client.Update(ctx, obj)
}

// BeginDeletion simulates HyperShift starting to delete the hosted cluster: the HostedCluster
// gets a deletionTimestamp (held by a finalizer), its API server goes away, and the HCP
// namespace starts terminating (with no namespace controller, it stays terminating).
func (f *Fleet) BeginDeletion(ctx context.Context, hc *HostedCluster) error {
	obj := &hyperv1.HostedCluster{}
	if err := f.Client.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: hc.Name}, obj); err != nil {
		return err
	}
	obj.Finalizers = append(obj.Finalizers, simulatedFinalizer)
	if err := f.Client.Update(ctx, obj); err != nil {
		return err
	}
	if err := f.Client.Delete(ctx, obj); err != nil {
		return err
	}
	if err := hc.StopAPIServer(); err != nil {
		return err
	}
	return client.IgnoreNotFound(f.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hc.HCPNamespace}}))
}

// FinishDeletion removes the HostedCluster for good, as HyperShift does once it tore down.
func (f *Fleet) FinishDeletion(ctx context.Context, hc *HostedCluster) error {
	obj := &hyperv1.HostedCluster{}
	if err := f.Client.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: hc.Name}, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	obj.Finalizers = nil
	if err := f.Client.Update(ctx, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	f.mu.Lock()
	delete(f.clusters, hc.key())
	f.mu.Unlock()
	return hc.StopAPIServer()
}

// StopAPIServer stops the hosted API server, as when the hosted control plane goes away. It is
// safe to call more than once.
func (hc *HostedCluster) StopAPIServer() error {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.controlPlane == nil {
		return nil
	}
	err := hc.controlPlane.Stop()
	hc.controlPlane = nil
	return err
}

func createIfMissing(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
