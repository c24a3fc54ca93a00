// Package forge runs a real Git forge for the tests: Gitea, built from source by `make tools`
// into bin/gitea (test/tools/forge/gitea), started as a process (test/infrastructure/process)
// with a SQLite database in a temporary folder, on a free port of 127.0.0.1, with an
// administrator and an access token. The helpers drive it through Gitea's Go SDK
// (code.gitea.io/sdk/gitea) and push with go-git over HTTP with basic auth:
//
//	f, err := forge.Start(ctx, forge.Options{})
//	defer f.Stop()
//	repo, err := f.CreateRepo("addons")                 // with an initial commit on main
//	commit, err := f.Push(ctx, forge.PushInput{Repo: repo, Branch: "change", Base: "main",
//		Message: "Raise replicas", Files: map[string]string{"pkg/cm.yaml": "..."}})
//	pr, err := f.OpenPullRequest(repo, "change", "main", "Raise replicas")
//	merge, err := f.Merge(repo, pr)                       // the merge commit on main
//	statuses, err := f.Statuses(repo, merge)              // what the controller reported
//
// Gitea reads its templates and options from the gitea module's directory in the module
// cache (STATIC_ROOT_PATH, found with go list in the helper module); it runs as root only
// because its configuration says I_AM_BEING_UNSAFE_RUNNING_AS_ROOT, and it may deliver
// webhooks to any host (the controller's receiver listens on 127.0.0.1).
package forge
