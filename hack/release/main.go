package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// releaseVersion is the form of a release's version: a semantic version with a v.
var releaseVersion = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)

// run parses args and writes the install file.
func run(args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	var in installInput
	layoutDir, out, previous := "", "", ""
	fs.StringVar(&in.Version, "version", "", "Version of the release, such as v0.1.0.")
	fs.StringVar(&layoutDir, "layout", "dist/oci", "OCI image layout `make image` wrote; the install pins its image index's digest.")
	fs.StringVar(&in.Repository, "image", defaultRepository, "Repository the image was pushed to (a tag, if any, is dropped for the digest).")
	fs.StringVar(&in.DeployDir, "deploy", "deploy", "The kustomize base to build.")
	fs.StringVar(&out, "out", "dist/install.yaml", "The install file to write.")
	fs.StringVar(&previous, "previous-crds", "", "Folder of the previous release's CRDs: the release is refused when its CRDs would break objects made with them, and the folder then gets this release's CRDs.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !releaseVersion.MatchString(in.Version) {
		return fmt.Errorf("-version %q: want a semantic version with a leading v, such as v0.1.0", in.Version)
	}
	if err := checkUpgrade(previous, in.DeployDir); err != nil {
		return err
	}
	digest, err := layoutDigest(layoutDir)
	if err != nil {
		return err
	}
	in.Digest = digest
	install, err := buildInstall(in)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, install, 0o644); err != nil { //nolint:gosec // a published file
		return err
	}
	fmt.Printf("wrote %s: convoy %s, image %s\n", out, in.Version, digest)
	if previous == "" {
		return nil
	}
	if err := snapshotCRDs(filepath.Join(in.DeployDir, "crds"), previous, in.Version); err != nil {
		return err
	}
	fmt.Printf("copied the CRDs of %s to %s: commit them with the release\n", in.Version, previous)
	return nil
}

// checkUpgrade refuses CRDs in deployDir that would break objects made with those of the
// previous release, in the folder previous (none when empty).
func checkUpgrade(previous, deployDir string) error {
	if previous == "" {
		return nil
	}
	old, err := loadCRDs(previous)
	if err != nil {
		return err
	}
	next, err := loadCRDs(filepath.Join(deployDir, "crds"))
	if err != nil {
		return err
	}
	if problems := upgradeProblems(old, next); len(problems) > 0 {
		return fmt.Errorf("the CRDs of %s/crds would break objects made with those of %s:\n  %s",
			deployDir, previous, strings.Join(problems, "\n  "))
	}
	return nil
}

// snapshotCRDs replaces the CRD files of dir with those of from, and names the release in
// dir/RELEASE.
func snapshotCRDs(from, dir, version string) error {
	old, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	files, err := filepath.Glob(filepath.Join(from, "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), raw, 0o644); err != nil { //nolint:gosec // committed files
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "RELEASE"), []byte(version+"\n"), 0o644) //nolint:gosec // committed file
}
