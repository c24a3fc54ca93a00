// Command convoy is convoy's one binary: the controller and the offline tools. The local demo is
// the development binary cmd/convoy-dev, so that this one carries no simulation.
// It only parses flags and wires packages together; behaviour lives in the domain packages.
package main

import (
	"errors"
	"os"
	// The rollout windows name IANA time zones; the image has no zoneinfo of its own.
	_ "time/tzdata"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		os.Exit(exitCode(err))
	}
}

// exitCode is the status convoy exits with after err: the error's own ExitCode, else 1.
func exitCode(err error) int {
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	return 1
}
