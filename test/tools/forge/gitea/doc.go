// Package gitea holds no code: its module pins Gitea (code.gitea.io/gitea v1.26.0, the last
// version published under that path), whose command `make tools` builds into bin/gitea for the
// tests' Git forge (test/infrastructure/forge). It is a module of its own because it copies
// Gitea's replace lines, which would otherwise change the versions the other tools build with.
package gitea
