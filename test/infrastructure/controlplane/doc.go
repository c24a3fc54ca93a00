// Package controlplane starts a local Kubernetes control plane, an etcd and a kube-apiserver
// built from source by `make tools`: the embedded control plane of `convoy-dev`, of the
// simulated fleet (test/infrastructure/simfleet) and so of every integration test.
//
// It replaces controller-runtime's envtest so that the convoy binary links no test code. Start
// generates a certificate authority, serving and client certificates and a service-account key
// in a temporary folder, starts both processes in their own process group with their output in
// that folder, waits until the API server is ready, installs the given CRDs and waits until
// they are established. The caller gets an administrator's rest.Config (a client certificate
// in group system:masters), which may impersonate any user. Stop ends both processes, first
// politely, and removes the folder.
//
//	cp, err := controlplane.Start(ctx, controlplane.Options{BinaryDir: "bin", CRDs: crds})
//	if err != nil {
//		return err
//	}
//	defer cp.Stop()
//	c, err := client.New(cp.Config, client.Options{})
package controlplane
