package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/manifests"
)

// hostedClusterPackageKind is what `convoy validate` reads of a file it is given.
var hostedClusterPackageKind = convoyv1alpha1.GroupVersion.WithKind("HostedClusterPackage")

// validateHostedClusterPackages checks, offline, the HostedClusterPackages that files hold (as
// a fleet repository keeps them; objects of other kinds are left alone): each decodes as
// convoy.dev/v1alpha1 with no unknown field, no name is defined twice, and their spec.dependsOn
// form no cycle, which the controller stalls on. It prints the order in which each HostedCluster
// gets them, and notes each dependency on a HostedClusterPackage the files do not define (its
// dependants wait on every HostedCluster until it exists). It returns the number of problems.
func validateHostedClusterPackages(w io.Writer, files []string) int {
	problems := 0
	definedIn := map[string]string{}
	needs := map[string][]string{}
	declared := false
	for _, file := range files {
		objs, err := readFleetFile(file)
		if err != nil {
			fmt.Fprintln(w, err)
			problems++
			continue
		}
		found := 0
		for _, u := range objs {
			if u.GroupVersionKind() != hostedClusterPackageKind {
				continue
			}
			found++
			hcp := &convoyv1alpha1.HostedClusterPackage{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, hcp, true); err != nil {
				fmt.Fprintf(w, "%s: HostedClusterPackage %q: %v\n", file, u.GetName(), err)
				problems++
				continue
			}
			if hcp.Name == "" {
				fmt.Fprintf(w, "%s: a HostedClusterPackage without metadata.name\n", file)
				problems++
				continue
			}
			if other, ok := definedIn[hcp.Name]; ok {
				fmt.Fprintf(w, "%s: HostedClusterPackage %q: defined again (first in %s): HostedClusterPackages are cluster-scoped, one per name\n",
					file, hcp.Name, other)
				problems++
				continue
			}
			definedIn[hcp.Name] = file
			needs[hcp.Name] = nil
			declared = declared || len(hcp.Spec.DependsOn) > 0
			for _, d := range hcp.Spec.DependsOn {
				needs[hcp.Name] = append(needs[hcp.Name], d.Name)
			}
		}
		if found == 0 {
			fmt.Fprintf(w, "%s: no HostedClusterPackage (%s) in the file: left alone\n", file, hostedClusterPackageKind.GroupVersion())
		}
	}
	if len(needs) == 0 {
		return problems
	}
	graph := manifests.GraphOf(needs)
	if graph.Cycle != nil {
		fmt.Fprintf(w, "dependsOn: spec.dependsOn forms a cycle: %s; the controller stalls each of its members (DependencyCycle)\n",
			strings.Join(graph.Cycle, " → "))
		return problems + 1
	}
	for _, o := range graph.Outside {
		name, dep, _ := strings.Cut(o, " needs ")
		fmt.Fprintf(w, "dependsOn: %s depends on %s, which none of these files defines: it waits on every HostedCluster until %s exists\n",
			name, dep, dep)
	}
	switch {
	case problems > 0:
	case !declared:
		fmt.Fprintf(w, "ok HostedClusterPackages: %d, none depends on another\n", len(needs))
	default:
		fmt.Fprintf(w, "ok HostedClusterPackages: %d; each HostedCluster gets them in the order %s\n", len(needs), graph)
	}
	return problems
}

// readFleetFile reads the objects of a YAML or JSON file of one or more documents as a package's
// files are read (at most manifests.MaxFileSize, YAML aliases bounded, errors naming file and
// line), from the file's own folder: a symbolic link that leads out of it is refused, as it is
// in a package directory, since validate runs on the files of a pull request.
func readFleetFile(name string) ([]*unstructured.Unstructured, error) {
	f, err := os.OpenInRoot(filepath.Dir(name), filepath.Base(name))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, manifests.MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > manifests.MaxFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes, the limit of a package's file", name, manifests.MaxFileSize)
	}
	return manifests.DecodeObjects(name, data)
}
