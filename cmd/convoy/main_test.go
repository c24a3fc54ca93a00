package main

import (
	"os"
	"testing"
)

// runMainEnv makes the test binary run convoy's main instead of the tests, so that a test can
// start `convoy controller` as a process of its own and read everything it prints.
const runMainEnv = "CONVOY_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
