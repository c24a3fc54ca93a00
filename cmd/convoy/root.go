package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the convoy command tree; each subcommand lives in its own file.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "convoy",
		Short:         "GitOps for fleets of HyperShift hosted clusters",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.AddCommand(
		newControllerCmd(),
		newRenderCmd(),
		newValidateCmd(),
		newStatusCmd(),
		newPlanCmd(),
		newApproveCmd(),
		newPromoteCmd(),
		newSectorsCmd(),
		newVersionCmd(),
		newDiffCmd(),
		newDashboardCmd(),
		newImportCmd(),
	)
	return root
}
