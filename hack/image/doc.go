// Command image builds convoy's container image without a container runtime, as `make image`
// runs it: for each platform, a layer of the static binary and a layer of the few files a
// process expects (CA certificates, /etc/passwd with the non-root user 65532, /tmp), on no base
// image, with OCI labels. It writes an OCI image layout holding one image index of every
// platform, and pushes that index when asked (-push registry/name:tag), with the credentials
// of the Docker config file (~/.docker/config.json, as `crane auth login` or `docker login` write
// it), or anonymously.
//
// Usage:
//
//	go run ./hack/image -out dist/oci -version v0.1.0 -revision COMMIT -created 2026-11-24T08:00:00Z \
//		-binary linux/amd64=dist/bin/linux/amd64/convoy -binary linux/arm64=dist/bin/linux/arm64/convoy \
//		[-push ghcr.io/convoy-gitops/convoy:v0.1.0]
package main
