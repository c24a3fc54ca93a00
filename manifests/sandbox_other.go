//go:build !linux

package manifests

import "os/exec"

// dieWithParent does nothing where the kernel cannot kill a child with its parent: there a
// render process killed with its controller runs on until its CPU limit.
func dieWithParent(*exec.Cmd) {}
