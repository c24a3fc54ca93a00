// Package crds embeds convoy's generated CustomResourceDefinitions so that the binary
// (`convoy-dev`) and the test harness install exactly what `make manifests` wrote.
package crds

import "embed"

// FS holds the CRD YAML files of this directory.
//
//go:embed *.yaml
var FS embed.FS
