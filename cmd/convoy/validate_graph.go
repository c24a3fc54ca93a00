package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/convoy-gitops/convoy/manifests"
)

// validateGraph checks the graph that the spec.dependencies (Package Operator's format) of the
// packages in dirs form, offline: it prints their order when two or more depend on one
// another, notes each dependency on a package outside dirs (a HostedClusterPackage must roll
// it out, or the dependant waits on every cluster), and reports a cycle, which the controller
// refuses; it returns false on a cycle. A directory whose manifest does not load was reported
// already and is left out.
func validateGraph(w io.Writer, dirs []string) bool {
	var heads []manifests.ManifestHead
	declared := false
	for _, dir := range dirs {
		fsys, err := openDir(dir)
		if err != nil {
			continue
		}
		head, err := manifests.ReadManifestHead(fsys, ".", "")
		if err != nil || head.Name == "" {
			continue
		}
		declared = declared || len(head.Dependencies) > 0
		heads = append(heads, head)
	}
	if !declared {
		return true
	}
	graph := manifests.NewDependencyGraph(heads)
	if graph.Cycle != nil {
		fmt.Fprintf(w, "dependencies: spec.dependencies form a cycle: %s\n", strings.Join(graph.Cycle, " → "))
		return false
	}
	for _, o := range graph.Outside {
		fmt.Fprintf(w, "dependencies: %s, which none of these directories is: a HostedClusterPackage must roll it out\n", o)
	}
	fmt.Fprintf(w, "ok dependencies: installs in the order %s\n", graph)
	return true
}
