// Package gittest gives tests a Git server (test/infrastructure/gitserver) over HTTP and SSH with one
// repository, and commits to it that fail the test on error.
//
//	srv, repo := gittest.NewServer(t)
//	first := gittest.Commit(t, repo, "first", map[string]string{"pkg/cm.yaml": cm})
//	// ...point a GitSource at srv.HTTPURL("repo")...
package gittest
