// Package buildinfo says which build of convoy is running: the module version, the Git commit,
// the build date and the Go version. The Makefile sets them with -ldflags -X; a binary built
// without them (go install, go build) falls back to what the Go toolchain recorded in it. The
// same facts are served on /metrics as the convoy_build_info gauge.
package buildinfo
