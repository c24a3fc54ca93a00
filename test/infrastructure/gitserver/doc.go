// Package gitserver is an in-process Git server for tests and for `convoy-dev`: it creates
// real repositories with the git CLI and serves them over file://, over HTTP through
// `git http-backend` (with optional basic auth) and over SSH through an
// golang.org/x/crypto/ssh server running `git-upload-pack`. It counts upload-pack requests and
// bytes so that tests can assert that a poll of an unchanged remote transferred nothing.
//
// It is a normal package (not a _test file) so that tests of any package and `convoy-dev` can
// import it; it needs the git CLI on PATH.
//
// Example:
//
//	srv, err := gitserver.New(t.TempDir())
//	if err != nil { ... }
//	defer srv.Close()
//	repo, _ := srv.CreateRepo("addons")
//	c1, _ := repo.Commit("main", "first", map[string]string{"packages/a/manifest.yaml": "..."})
//	_ = repo.AnnotatedTag("v1.0.0", c1, "release 1.0.0")
//	srv.SetBasicAuth("user", "secret")
//	httpURL, _ := srv.StartHTTP()      // http://127.0.0.1:port/addons.git
//	sshURL, _ := srv.StartSSH()        // ssh://git@127.0.0.1:port/addons.git
//	key, _ := gitserver.NewClientKey() // authorize it, put key.PrivatePEM and srv.KnownHosts() in a Secret
//	srv.AuthorizeKey(key.Public)
//	before := srv.Stats()
//	// ... poll ...
//	if srv.Stats().UploadPacks != before.UploadPacks { ... } // something was fetched
package gitserver
