// Command convoy is convoy's one binary: the controller, the local demo and the offline tools.
// It only parses flags and wires packages together; behaviour lives in the domain packages.
package main

import (
	"os"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		os.Exit(1)
	}
}
