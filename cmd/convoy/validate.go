package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"
)

// newValidateCmd builds `convoy validate`, which loads package directories offline and lists
// every problem as "file:line: rule: message", exiting non-zero when there is any; it is meant
// for pull-request CI.
func newValidateCmd() *cobra.Command {
	var f templateDataFlags
	cmd := &cobra.Command{
		Use:   "validate DIR...",
		Short: "Check package directories offline and list every problem, one per line",
		Example: "  convoy validate examples/packages/*\n" +
			"  convoy validate packages/extra-component --config ci/values.yaml --hosted-cluster clusters/ci",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runValidate(cmd.OutOrStdout(), args, &f)
		},
	}
	f.bind(cmd.Flags())
	return cmd
}

// runValidate validates each directory, printing problems as they are found.
func runValidate(w io.Writer, dirs []string, f *templateDataFlags) error {
	failed := 0
	for _, dir := range dirs {
		rendered, err := renderLocal(dir, f)
		if err != nil {
			failed++
			if reportErr := reportLoadError(w, filepath.ToSlash(filepath.Clean(dir)), err); reportErr != nil {
				fmt.Fprintln(w, reportErr)
			}
			continue
		}
		objects := 0
		for _, ph := range rendered.Phases {
			objects += len(ph.Objects)
		}
		fmt.Fprintf(w, "ok %s: %d phases, %d objects\n", dir, len(rendered.Phases), objects)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d package(s) invalid", failed, len(dirs))
	}
	return nil
}
