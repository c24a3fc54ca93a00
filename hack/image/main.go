package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// run parses args, writes the layout and pushes it when -push is given.
func run(args []string) error {
	spec, out, push, err := parseFlags(args)
	if err != nil {
		return err
	}
	idx, err := buildIndex(spec)
	if err != nil {
		return err
	}
	digest, err := writeLayout(out, idx, spec.Version)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: image index %s\n", out, digest)
	if push == "" {
		return nil
	}
	pushed, err := pushIndex(idx, push, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s\n", pushed)
	return nil
}

// parseFlags reads the image's specification from args.
func parseFlags(args []string) (spec imageSpec, out, push string, err error) {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var binaries binaryFlags
	created := ""
	fs.Var(&binaries, "binary", "OS/ARCH=PATH of a static convoy binary; repeat for each platform.")
	fs.StringVar(&out, "out", "dist/oci", "Directory of the OCI image layout to write (replaced).")
	fs.StringVar(&push, "push", "", "Reference to push the image index to, such as ghcr.io/convoy-gitops/convoy:v0.1.0.")
	fs.StringVar(&spec.Version, "version", "", "Version label (org.opencontainers.image.version).")
	fs.StringVar(&spec.Revision, "revision", "", "Git commit label (org.opencontainers.image.revision).")
	fs.StringVar(&spec.Source, "source", "https://github.com/convoy-gitops/convoy", "Source repository label (org.opencontainers.image.source).")
	fs.StringVar(&created, "created", "", "Creation time, RFC 3339 (org.opencontainers.image.created); also the time of every file, for a reproducible image.")
	fs.StringVar(&spec.CABundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM file of the CA certificates to put in the image; when it does not exist, the roots of "+fallbackBundleSource+".")
	if err := fs.Parse(args); err != nil {
		return spec, "", "", err
	}
	spec.Binaries = binaries
	if spec.Created, err = time.Parse(time.RFC3339, created); err != nil {
		return spec, "", "", fmt.Errorf("-created %q: not an RFC 3339 time: %w", created, err)
	}
	return spec, out, push, spec.validate()
}

// binaryFlags collects the -binary OS/ARCH=PATH flags.
type binaryFlags []platformBinary

// String prints the flags as given.
func (b *binaryFlags) String() string {
	parts := make([]string, 0, len(*b))
	for _, p := range *b {
		parts = append(parts, p.OS+"/"+p.Arch+"="+p.Path)
	}
	return strings.Join(parts, ",")
}

// Set adds one OS/ARCH=PATH.
func (b *binaryFlags) Set(v string) error {
	platform, path, ok := strings.Cut(v, "=")
	goos, arch, ok2 := strings.Cut(platform, "/")
	if !ok || !ok2 || goos == "" || arch == "" || path == "" {
		return errors.New("want OS/ARCH=PATH, such as linux/amd64=dist/bin/linux/amd64/convoy")
	}
	*b = append(*b, platformBinary{OS: goos, Arch: arch, Path: path})
	return nil
}
