package main

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// fallbackBundleSource names where the CA certificates come from on a machine without a CA
// bundle file: the Mozilla roots the Go project publishes for programs without system roots.
const fallbackBundleSource = "golang.org/x/crypto/x509roots/fallback"

// caBundle returns the PEM CA certificates of the file path and where they come from. Without
// the file (a build machine that is not Debian-like), it returns the roots of Go's fallback
// bundle instead, leaving out the few that carry a constraint (such as a distrust date) that a
// PEM file cannot express.
func caBundle(path string) ([]byte, string, error) {
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		return raw, path, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, "", fmt.Errorf("reading the CA certificates %s: %w", path, err)
	}
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, "", err
		}
	}
	return buf.Bytes(), fallbackBundleSource, nil
}
