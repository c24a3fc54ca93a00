// Package clidocs generates the command-line part of docs/reference from cobra commands: one
// Markdown page per command (spf13/cobra/doc) and Markdown tables of flags. It also compares
// generated files with the committed ones, or rewrites them, so that the golden tests of
// cmd/convoy and cmd/convoy-dev keep the reference in step with the commands.
//
// Only tests import it: the product binary links neither it nor cobra/doc.
package clidocs
