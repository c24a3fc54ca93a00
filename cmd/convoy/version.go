package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/convoy-gitops/convoy/internal/buildinfo"
)

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, Git revision, build date and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout(), buildinfo.Get(), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "Output format: text or json.")
	return cmd
}

// printVersion writes info to out as text or JSON.
func printVersion(out io.Writer, info buildinfo.Info, output string) error {
	switch output {
	case "text":
		_, err := io.WriteString(out, info.String())
		return err
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	default:
		return fmt.Errorf("convoy version: unknown output format %q: use text or json", output)
	}
}

// registerBuildInfo adds the convoy_build_info gauge to reg, once per process (convoy-dev and the
// tests may start the controller more than once).
func registerBuildInfo(reg prometheus.Registerer) error {
	err := reg.Register(buildinfo.NewCollector())
	if already := (prometheus.AlreadyRegisteredError{}); errors.As(err, &already) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("registering the build info metric: %w", err)
	}
	return nil
}
