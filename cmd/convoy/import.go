package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/convoy-gitops/convoy/cmd/convoy/importer"
)

func newImportCmd() *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "import [FILE...]",
		Short: "Write the GitSources and HostedClusterPackages that take a fleet over from Flux or Package Operator",
		Long: "Reads Flux GitRepository and Kustomization objects and Package Operator HostedClusterPackages from the files\n" +
			"given, or from the cluster of --kubeconfig when none is, and prints the convoy objects to commit in their\n" +
			"place (spec.adopt set, so that their first rollout takes the running objects over). What does not map is\n" +
			"printed on standard error, one note per line.",
		RunE: func(cmd *cobra.Command, args []string) error {
			objs, err := readImport(cmd, args, kubeconfig)
			if err != nil {
				return err
			}
			r := importer.Import(objs)
			for _, n := range r.Notes {
				fmt.Fprintln(cmd.ErrOrStderr(), "note: "+n)
			}
			return r.WriteYAML(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the cluster to read when no file is given (default: $KUBECONFIG, in-cluster, then ~/.kube/config).")
	return cmd
}

// readImport decodes the files, or lists the cluster when there are none.
func readImport(cmd *cobra.Command, files []string, kubeconfig string) ([]*unstructured.Unstructured, error) {
	if len(files) == 0 {
		c, err := newCLIClient(kubeconfig)
		if err != nil {
			return nil, err
		}
		return importer.ReadCluster(cmd.Context(), c)
	}
	var objs []*unstructured.Unstructured
	for _, name := range files {
		read, err := readObjects(name)
		if err != nil {
			return nil, err
		}
		objs = append(objs, read...)
	}
	return objs, nil
}

// readObjects reads the objects of a YAML or JSON file of one or more documents; an error names
// the file.
func readObjects(name string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	objs, err := importer.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return objs, nil
}
