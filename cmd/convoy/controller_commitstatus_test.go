package main

import (
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
)

// TestCommitStatusInsecureHTTPIsItsOwnFlag checks that Git's --allow-insecure-http does not let
// commit statuses send their token over http://: only --commit-status-allow-insecure-http does.
func TestCommitStatusInsecureHTTPIsItsOwnFlag(t *testing.T) {
	g := NewWithT(t)
	reporter := func(args ...string) bool {
		o := &commitStatusOptions{}
		fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
		o.bindFlags(fs)
		fs.Bool("allow-insecure-http", false, "Git's flag")
		g.Expect(fs.Parse(args)).To(Succeed())
		return o.reporter().AllowInsecureHTTP
	}
	g.Expect(reporter("--allow-insecure-http")).To(BeFalse())
	g.Expect(reporter("--commit-status-allow-insecure-http")).To(BeTrue())
	g.Expect(reporter()).To(BeFalse())
}
