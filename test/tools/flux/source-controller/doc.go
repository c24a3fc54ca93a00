// Package sourcecontroller holds no code: its module pins Flux's source-controller (v1.9.3),
// whose command `make tools` builds into bin/source-controller for the takeover test
// (test/takeover), which moves add-ons from a running Flux to convoy. It is a module of its own
// because it copies source-controller's replace line and keeps its dependency versions apart
// from the other tools'.
package sourcecontroller
