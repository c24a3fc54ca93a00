// Package hosted reaches the hosted cluster of a HyperShift hosted control plane (HCP)
// namespace, for the phases of class hosted-cluster.
//
// Discovery: a namespace is an HCP namespace when it holds a HostedControlPlane; the
// HostedControlPlane's hypershift.openshift.io/cluster annotation ("<namespace>/<name>") names
// its HostedCluster, whose metadata (labels, annotations, deletion) Discover returns. Only
// object metadata is read, so a manager's cache for these kinds can be metadata-only.
//
// Credentials: the service-network-admin-kubeconfig Secret of the HCP namespace (or the Secret
// a Package names in spec.hostedCluster.kubeconfigSecretRef). Its server,
// https://kube-apiserver:6443, only resolves inside that namespace, so the host kube-apiserver
// is rewritten to kube-apiserver.<namespace>.svc; any other server URL is used as is. A
// kubeconfig is data: KubeconfigPolicy refuses exec and auth-provider plugins, file
// references, proxy-url and insecure-skip-tls-verify unless a controller flag allows them.
//
// Clients are cached per Secret and rebuilt when the Secret's resourceVersion changes
// (certificates rotate); the resourceVersion is read from metadata (a cache hit in a manager),
// the Secret's data only when it changed. Clients unused for Options.IdleTimeout are dropped.
// They are plain uncached clients: a thousand hosted clusters must not mean a thousand watch
// caches.
//
// Faults: every request is bounded by Options.Timeout, the connect and TLS handshake by
// Options.ConnectTimeout. Each client has a circuit, so that a dead cluster never holds a
// worker for long: once a request gets no answer, requests to that cluster fail at once with
// an *UnreachableError until a doubling backoff has passed; then a probe tries the cluster
// in the background, holding one of Options.MaxProbes slots shared by every cluster, while
// requests still fail at once, and its answer closes the circuit. A new connection whose TLS
// handshake is pending for longer than the patience (ten times the typical handshake of the
// clusters that answer, at least 250ms, at most half the connect timeout) gives up the
// requests waiting on its cluster, which fail at once until the handshake ends: a cluster
// that accepts connections and never answers holds a worker for the patience, not for the
// connect timeout.
package hosted
